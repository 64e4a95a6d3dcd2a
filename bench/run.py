"""The measurements: rounds of every variant at each N, cleaned between, and the scale-out.

A variant is one agent tree (``agent:LABEL``), ``kubectl`` (``kubectl apply --server-side``) or
``loop`` (the plain parallel server-side-apply loop, the server's ceiling). Every round starts
from no objects at all (the 10 namespaces deleted and waited for), so each cold figure is cold.
Requests come from the API server's ``apiserver_request_total`` read just before and just after
the measured step (see ``stats.client_requests`` for what counts as the client's).
"""

from __future__ import annotations

import datetime
import json
import random
import re
import string
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import agent_run, push, stats, workload
from .api import Api

FAKE_COMMIT = "0" * 40  # the source-commit annotation of the Applications kubectl and the loop apply
SETTLE = 0.5  # seconds: the API server counts a request as its answer leaves; let it land


class OutOfTime(Exception):
    """The ``--stop-at`` time passed: the current size is abandoned, what was measured stays."""


@dataclass
class Bench:
    """One benchmark run's context and everything it measured (``results`` is JSON-ready)."""

    api: Api
    cluster: object  # tests.cluster.Cluster (its kubectl)
    work: Path
    trees: list
    concurrency: int | None
    threads: int
    stop_at: datetime.datetime | None
    log: object
    samples: stats.Samples = field(default_factory=stats.Samples)
    details: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    prefix: str = ""  # the namespaces of the current round (see workload)
    rounds: int = 0
    last_requests: dict = field(default_factory=dict)  # the last ``measure``'s client_requests
    baseline_max_n: int = 0  # kubectl and the loop only up to this N (0: every N; BENCH_BASELINE_MAX_N)
    run_id: str = field(default_factory=lambda: "".join(random.choice(string.ascii_lowercase) for _ in range(3)))

    # -- helpers ---------------------------------------------------------------------------
    def say(self, text: str) -> None:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S")
        print(f"[{stamp}] {text}", file=self.log, flush=True)

    def check_time(self) -> None:
        if self.stop_at and datetime.datetime.now(datetime.timezone.utc) > self.stop_at:
            raise OutOfTime(f"past --stop-at {self.stop_at:%H:%M} UTC")

    def timeout(self, default: float) -> float:
        if not self.stop_at:
            return default
        left = (self.stop_at - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
        return max(1.0, min(default, left))

    def clean(self) -> str:
        """Delete the last round's namespaces and wait until they are gone; returns the
        namespace prefix of the next round (new names, see ``workload``)."""
        self.check_time()
        if self.prefix:
            try:
                seconds = self.api.delete_namespaces(workload.namespace_names(self.prefix), timeout=self.timeout(1800))
            except RuntimeError:  # the wait was cut short by --stop-at: stop as every other step does
                self.check_time()
                raise
            quiet = self.quiesce()
            self.say(f"  cleaned {self.prefix}-* in {seconds:.1f}s, quiet after {quiet:.1f}s more")
        self.rounds += 1
        self.prefix = f"b{self.run_id}{self.rounds}"
        return self.prefix

    def remove_leftovers(self) -> None:
        """Delete namespaces an earlier, interrupted run left (``b<run><round>-<k>``), so no
        measured pass prunes them."""
        left = [ns["metadata"]["name"] for ns in self.api.list("Namespace")
                if re.fullmatch(r"b[a-z]{3}\d+-\d+", ns["metadata"]["name"])]
        if left:
            self.say(f"deleting {len(left)} namespaces an earlier run left")
            self.api.delete_namespaces(left, timeout=self.timeout(1800))

    def quiesce(self, window: float = 2.0, limit: float = 60.0) -> float:
        """Wait until ``window`` seconds pass with no request a client would be counted for
        (the garbage collector finishing with deleted objects); at most ``limit`` seconds."""
        started = time.monotonic()
        before = self.api.request_counts()
        while time.monotonic() - started < limit:
            time.sleep(window)
            after = self.api.request_counts()
            if not stats.client_requests(stats.delta(before, after)):
                break
            before = after
        return time.monotonic() - started

    def fresh_repo(self, n: int) -> tuple[Path, str]:
        """A new Git repository of N Applications in this round's namespaces, and its commit."""
        repo = self.work / f"repo-{n}-{self.prefix}"
        return repo, workload.make_repo(repo, n, self.prefix)

    def measure(self, n: int, variant: str, phase: str, step) -> float:
        """Run ``step()`` (returns its seconds, or None to time it here) between two metric
        readings; record seconds and request counts under ``phase``; return the seconds."""
        self.check_time()
        before = self.api.request_counts()
        started = time.monotonic()
        seconds = step()
        if seconds is None:
            seconds = time.monotonic() - started
        time.sleep(SETTLE)
        requests = stats.client_requests(stats.delta(before, self.api.request_counts()))
        self.last_requests = requests
        count = stats.totals(requests)
        self.samples.add(n, variant, f"{phase}_s", seconds)
        for key, value in count.items():
            self.samples.add(n, variant, f"{phase}_{key}", value)
        self.details[f"{n}|{variant}|{phase}"] = stats.describe(requests)
        self.say(f"  {variant} {phase}: {seconds:.2f}s, {count['requests']} requests "
                 f"({count['writes']} writes): {stats.describe(requests)}")
        return seconds

    def expect(self, what: str, ok: bool) -> None:
        if not ok:
            raise RuntimeError(f"check failed: {what}")

    def counts(self) -> tuple[int, int, int]:
        sel = "app.kubernetes.io/managed-by=gitops-agent"
        return (len(self.api.list("Application")), len(self.api.list("Deployment", sel)),
                len(self.api.list("Service", sel)))

    def wait_observed(self, n: int) -> None:
        """Until the deployment controller has observed every Deployment (health settles)."""
        deadline = time.monotonic() + self.timeout(600)
        while time.monotonic() < deadline:
            deps = self.api.list("Deployment", "app.kubernetes.io/managed-by=gitops-agent")
            if len(deps) >= n and all((d.get("status") or {}).get("observedGeneration", 0)
                                      >= d["metadata"].get("generation", 1) for d in deps):
                return
            time.sleep(1.0)
        self.notes.append(f"N={n}: not every Deployment was observed within 600 s before the settle pass")

    # -- variants --------------------------------------------------------------------------
    def agent_round(self, n: int, tree, rnd: int) -> None:
        variant = f"agent:{tree.label}"
        repo, _ = self.fresh_repo(n)
        cache = self.work / f"cache-{n}-{tree.label}-{rnd}"
        args = agent_run.sync_args(repo, workload.ROOT_PATH, "bench", self.cluster.kubeconfig, cache,
                                   self.concurrency, tree)
        logs = self.work / "logs"
        logs.mkdir(exist_ok=True)
        rss = []

        def agent_pass(phase):
            def step():
                done = agent_run.run_pass(tree, args, logs / f"{n}-{tree.label}-{rnd}-{phase}.log",
                                          timeout=self.timeout(3600))
                if done.code not in (0, 1):
                    raise RuntimeError(f"{variant} {phase} pass exited {done.code}:\n{done.output[-2000:]}")
                rss.append(done.rss_mib)
                self.samples.add(n, variant, f"{phase}_rss_mib", done.rss_mib)
                return done.seconds
            return step

        self.measure(n, variant, "cold", agent_pass("cold"))
        own_events = len(self.api.events_from("gitops-agent"))  # every namespace is new: this pass's
        self.samples.add(n, variant, "cold_per_pass_requests", stats.per_pass(self.last_requests, own_events))
        self.expect(f"{n} Applications, Deployments and Services after the cold pass", self.counts() == (n, n, n))
        self.wait_observed(n)
        self.measure(n, variant, "settle", agent_pass("settle"))
        self.measure(n, variant, "nochange", agent_pass("nochange"))
        workload.change_one(repo, self.prefix)
        self.measure(n, variant, "changeone", agent_pass("changeone"))
        first = workload.app_name(0), workload.app_namespace(0, self.prefix)
        dep = self.api.request("GET", f"/apis/apps/v1/namespaces/{first[1]}/deployments/{first[0]}")
        self.expect("the changed image applied",
                    dep["spec"]["template"]["spec"]["containers"][0]["image"] == workload.CHANGED_IMAGE)
        self.api.request("PATCH", f"/apis/apps/v1/namespaces/{first[1]}/deployments/{first[0]}"
                         "?fieldManager=kubectl-edit", body={"spec": {"replicas": 1}},
                         content_type="application/strategic-merge-patch+json")
        self.measure(n, variant, "handedit", agent_pass("handedit"))
        dep = self.api.request("GET", f"/apis/apps/v1/namespaces/{first[1]}/deployments/{first[0]}")
        self.expect("the hand edit undone", dep["spec"]["replicas"] == 0)
        self.samples.add(n, variant, "peak_rss_mib", max(rss))
        push.measure(self, n, tree, repo, cache, logs, rnd)  # run, the same repository and cache

    def kubectl_round(self, n: int) -> None:
        first = self.work / f"kubectl-apps-{n}.json"
        second = self.work / f"kubectl-children-{n}.json"
        apps = workload.namespaces(self.prefix) + workload.desired_applications(n, self.prefix, FAKE_COMMIT,
                                                                               "bench-kubectl")
        first.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": apps}))

        def apply(path):
            self.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path),
                                 timeout=self.timeout(3600))

        def cold():
            apply(first)
            children = workload.children_of(self.api.list("Application"))
            second.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": children}))
            apply(second)

        self.measure(n, "kubectl", "cold", cold)
        self.expect("kubectl made every object", self.counts() == (n, n, n))
        self.measure(n, "kubectl", "reapply", lambda: (apply(first), apply(second)) and None)

    def loop_round(self, n: int) -> None:
        apps = workload.namespaces(self.prefix) + workload.desired_applications(n, self.prefix, FAKE_COMMIT,
                                                                               "bench-loop")
        children: list = []

        def cold():
            self.api.apply_all(apps, self.threads)
            children.extend(workload.children_of(self.api.list("Application")))
            self.api.apply_all(children, self.threads)

        self.measure(n, "loop", "cold", cold)
        self.expect("the loop made every object", self.counts() == (n, n, n))
        self.measure(n, "loop", "reapply", lambda: self.api.apply_all(apps + children, self.threads))

    # -- sizes -----------------------------------------------------------------------------
    def size(self, n: int, repeats: int) -> None:
        baselines = ["kubectl", "loop"] if not self.baseline_max_n or n <= self.baseline_max_n else []
        if not baselines:
            self.notes.append(f"N={n:,}: kubectl and the loop not measured (BENCH_BASELINE_MAX_N={self.baseline_max_n})")
        variants = [f"agent:{t.label}" for t in self.trees] + baselines
        order = stats.interleave(variants, repeats)
        self.say(f"N={n}: {repeats} round(s) of {', '.join(variants)}")
        for rnd, variant in order:
            self.say(f" round {rnd + 1}/{repeats}: {variant}")
            self.clean()
            if variant.startswith("agent:"):
                tree = next(t for t in self.trees if f"agent:{t.label}" == variant)
                self.agent_round(n, tree, rnd)
            elif variant == "kubectl":
                self.kubectl_round(n)
            else:
                self.loop_round(n)

    def profile(self, n: int) -> dict:
        """A cProfile of one cold pass per tree at ``n``: {label: top-20 text}."""
        out = {}
        for tree in self.trees:
            self.clean()
            repo, _ = self.fresh_repo(n)
            cache = self.work / f"cache-profile-{tree.label}"
            prof = self.work / f"cold-{tree.label}.prof"
            args = agent_run.sync_args(repo, workload.ROOT_PATH, "bench", self.cluster.kubeconfig, cache,
                                       self.concurrency, tree)
            self.say(f" profiling a cold pass of agent:{tree.label} at N={n}")
            done = agent_run.run_pass(tree, args, self.work / f"profile-{tree.label}.log",
                                      timeout=self.timeout(3600), profile=prof)
            out[tree.label] = {"seconds": done.seconds, "code": done.code,
                               "top": agent_run.profile_top(prof, tree.path)}
        return out

    def scale_out(self, n: int, tree, repeats: int) -> dict:
        """One agent on all N against two at once on the halves (own source ids and caches)."""
        logs = self.work / "logs"
        logs.mkdir(exist_ok=True)
        self.say(f"scale-out at N={n} with agent:{tree.label}: {repeats} round(s)")
        for rnd, variant in stats.interleave(["one", "two"], repeats):
            self.clean()
            repo, _ = self.fresh_repo(n)
            for phase in ("cold", "nochange"):
                jobs = [(workload.ROOT_PATH, "bench-all")] if variant == "one" else \
                    [(workload.HALVES[0], "bench-half-0"), (workload.HALVES[1], "bench-half-1")]
                passes: list = []

                def step():
                    started = time.monotonic()
                    procs = []
                    for path, sid in jobs:
                        args = agent_run.sync_args(repo, path, sid, self.cluster.kubeconfig,
                                                   self.work / f"cache-scale-{sid}-{rnd}", self.concurrency, tree)
                        log = logs / f"scale-{n}-{sid}-{rnd}-{phase}.log"
                        procs.append((agent_run.start(tree, args, log), log))
                    passes.extend(agent_run.wait(p, started, log, self.timeout(3600)) for p, log in procs)
                    bad = [p for p in passes if p.code not in (0, 1)]
                    if bad:
                        raise RuntimeError(f"scale-out {variant} {phase} failed:\n{bad[0].output[-2000:]}")
                    return max(p.seconds for p in passes)

                self.measure(n, f"scale:{variant}", phase, step)
                self.samples.add(n, f"scale:{variant}", f"{phase}_rss_mib", max(p.rss_mib for p in passes))
                if phase == "cold":
                    self.expect("every object after the scale-out cold pass", self.counts() == (n, n, n))
                    self.wait_observed(n)
                    self.measure(n, f"scale:{variant}", "settle", lambda: _run_all(self, tree, repo, jobs, rnd))
        return {"n": n, "tree": tree.label, "repeats": repeats}


def _run_all(bench: Bench, tree, repo: Path, jobs, rnd: int) -> float:
    """The settle pass of the scale-out: every job at once, the wall time of the slowest."""
    started = time.monotonic()
    procs = []
    for path, sid in jobs:
        args = agent_run.sync_args(repo, path, sid, bench.cluster.kubeconfig,
                                   bench.work / f"cache-scale-{sid}-{rnd}", bench.concurrency, tree)
        log = bench.work / "logs" / f"scale-settle-{sid}-{rnd}.log"
        procs.append((agent_run.start(tree, args, log), log))
    done = [agent_run.wait(p, started, log, bench.timeout(3600)) for p, log in procs]
    return max(d.seconds for d in done)
