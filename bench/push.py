"""Push to live (issue 33): how long after a push webhook one changed Application's child is live.

After a round's ``sync --once`` steps, the same tree's long-running ``run`` is started against the
round's repository and Git cache (its own log, webhook secret and HTTP port) and measured:

- its no-change pass: a verified push webhook with no new commit, ``RUN_NOCHANGE`` times; the
  pass's own ``duration_seconds`` (its ``event: pass`` log line) and the API server's requests
  during it (``Bench.measure``: LISTs and writes known);
- ``PUSHES`` pushes, each a commit changing ONE Application's image (spread over the range:
  ``i = k*N//PUSHES``), then the webhook. A WATCH on that Application's Deployment, opened from
  its resourceVersion before the POST, gives ``applied`` (the first event with a higher
  ``metadata.generation``); the ``pass end`` is when the webhook pass's log line is read (the log
  polled every 10 ms). The status writes (``applications/status``) the API server counted
  between the POST and ``applied``, over N, show how much of the sweep came first;
- the floor: ``kubectl apply --server-side --dry-run=server`` of the last changed Application's
  file, ``FLOOR_REPEATS`` times (dry-run, so the agent's objects are not disturbed; kubectl's
  process start is included);
- ``run``'s peak RSS (``VmHWM``) over the step, and its exit on SIGTERM (it must exit 0 within
  ``STOP_TIMEOUT`` seconds; otherwise the bench fails with the log's tail).

``run`` is killed whenever the step fails. Pure helpers (``signature``, ``push_indices``,
``pass_lines``) are unit-tested in ``tests/unit/bench/test_bench_push.py``.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import urllib3
import yaml

from . import agent_run, stats, workload

PUSHES = 10
RUN_NOCHANGE = 3
FLOOR_REPEATS = 10
POLL = 0.01  # seconds between reads of run's log
STOP_TIMEOUT = 60.0  # seconds run may take to exit after SIGTERM (its --shutdown-grace is 20 s)
QUIET = 2.0  # seconds with no new pass line before each webhook, at least (see Run.quiet)
QUIET_LIMIT = 300.0
HOOK_BODY = b'{"ref": "refs/heads/main"}'
WEBHOOK_FLAG = "--webhook-secret-file"


# -- pure helpers ----------------------------------------------------------------------------

def signature(secret: bytes, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` header GitHub sends: ``sha256=<hex HMAC-SHA256 of body>``."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def push_indices(n: int, pushes: int = PUSHES) -> list[int]:
    """The Applications the pushes change, spread over 0..n-1: ``k*n//pushes`` (repeats when
    n < pushes)."""
    return [k * n // pushes for k in range(pushes)]


def pass_lines(text: str) -> list[dict]:
    """The JSON log lines of ``text`` whose ``event`` is ``pass``, in order; other lines (text,
    other events, a half-written last line) are skipped."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("event") == "pass":
            out.append(record)
    return out


def other_image(image: str) -> str:
    """The tag a push flips an Application's image to: the two tags of ``workload`` in turn."""
    return workload.IMAGE if image == workload.CHANGED_IMAGE else workload.CHANGED_IMAGE


# -- the run process -----------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def supported(tree: agent_run.Tree) -> bool:
    """Whether the tree's ``run`` takes ``--webhook-secret-file``."""
    done = subprocess.run([tree.python, "-m", "agent", "run", "--help"], cwd=tree.path,
                          env=agent_run._env(tree.path), capture_output=True, text=True)
    return WEBHOOK_FLAG in done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_args(repo: Path, kubeconfig: Path, cache: Path, port: int, secret_file: Path,
             concurrency: int | None, tree: agent_run.Tree) -> list[str]:
    args = ["run", "--repo", str(repo), "--path", workload.ROOT_PATH, "--source-id", "bench",
            "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache), "--max-prune-share", "1",
            "--interval", "3600", "--http-addr", f"127.0.0.1:{port}", WEBHOOK_FLAG, str(secret_file),
            "--no-leader-elect", "--log-format", "json"]
    if concurrency is not None and tree.concurrency_flag:
        args += ["--concurrency", str(concurrency)]
    return args


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the harness dies (a kill the ``finally`` that stops
    ``run`` never sees); Linux only, best effort."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001
        pass


class Run:
    """One ``run`` process: its log read incrementally for pass lines, webhooks, peak RSS."""

    def __init__(self, tree: agent_run.Tree, args: list[str], log: Path, port: int, secret: bytes):
        self.log, self.port, self.secret = log, port, secret
        with open(log, "wb") as out:  # as agent_run.start, and ended with the harness if that is killed
            self.proc = subprocess.Popen([tree.python, "-m", "agent", *args], cwd=tree.path,
                                         env=agent_run._env(tree.path), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        self.offset = 0  # bytes of the log already read
        self.partial = b""
        self.passes: list[dict] = []  # every pass line read so far, with "read_at" (monotonic)
        self.peak_kib = 0

    def poll(self) -> list[dict]:
        """Pass lines that appeared since the last call (stamped ``read_at``)."""
        self.peak_kib = max(self.peak_kib, agent_run.high_water_kib(self.proc.pid))
        with open(self.log, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        now = time.monotonic()
        if not data:
            return []
        self.offset += len(data)
        data = self.partial + data
        complete, _, self.partial = data.rpartition(b"\n")
        new = pass_lines(complete.decode(errors="replace"))
        for record in new:
            record["read_at"] = now
        self.passes.extend(new)
        return new

    def wait_pass(self, timeout: float, trigger: str | None = None) -> dict:
        """The next pass line (of ``trigger`` when given; the others are kept in ``passes``)."""
        deadline = time.monotonic() + timeout
        while True:
            for record in self.poll():
                if trigger is None or record.get("trigger") == trigger:
                    return record
            if self.proc.poll() is not None:
                raise RuntimeError(f"run exited {self.proc.returncode} while a pass was awaited:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {trigger or 'first'} pass of run within {timeout:.0f}s:\n{self.tail()}")
            time.sleep(POLL)

    def quiet(self, limit: float = QUIET_LIMIT) -> None:
        """Until no new pass line appeared for a while (at most ``limit`` seconds): ``QUIET``
        seconds, or longer after a long pass (1.5 times its duration plus the agent's 0.5 s
        debounce), so that a pass the last one's own changes set off (trigger ``watch``; the log
        shows no pass start) is likely over before the next webhook."""
        def window() -> float:
            last = float(self.passes[-1].get("duration_seconds") or 0) if self.passes else 0.0
            return max(QUIET, 1.5 * last + 0.5)

        started = last = time.monotonic()
        while time.monotonic() - last < window() and time.monotonic() - started < limit:
            if self.poll():
                last = time.monotonic()
            time.sleep(0.05)

    def hook(self) -> int:
        """POST a signed GitHub push webhook; returns the HTTP status (202 expected)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/hooks/git", data=HOOK_BODY, method="POST",
            headers={"X-GitHub-Event": "push", "Content-Type": "application/json",
                     "X-Hub-Signature-256": signature(self.secret, HOOK_BODY)})
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                return resp.status
        except urllib.error.HTTPError as err:
            return err.code

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = STOP_TIMEOUT) -> tuple[int | None, float]:
        """SIGTERM and wait: (exit code, seconds); the code is None when it had to be killed."""
        self.peak_kib = max(self.peak_kib, agent_run.high_water_kib(self.proc.pid))
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            code = None
        return code, time.monotonic() - started

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# -- the child's watch ---------------------------------------------------------------------------

class Applied:
    """A WATCH on one Deployment from ``rv``, in a thread: ``at`` (monotonic) and ``counts``
    (``apiserver_request_total`` read right then) once an event shows a generation above ``gen``."""

    def __init__(self, api, namespace: str, name: str, rv: str, gen: int, timeout: float):
        self.api, self.gen = api, gen
        self.at: float | None = None
        self.counts: dict | None = None
        self.image: str | None = None
        self.error: str | None = None
        self.done = threading.Event()
        path = (f"/apis/apps/v1/namespaces/{namespace}/deployments?watch=1&fieldSelector=metadata.name%3D{name}"
                f"&resourceVersion={rv}&timeoutSeconds={int(timeout)}")
        # returns once the server sent its headers: the watch is established before the push
        self.resp = api.pool.request("GET", api.server + path, headers=api.headers, preload_content=False,
                                     timeout=urllib3.Timeout(connect=10, read=timeout + 30))
        if self.resp.status != 200:
            raise RuntimeError(f"WATCH {path}: {self.resp.status} {self.resp.read()[:300]!r}")
        threading.Thread(target=self._read, name="bench-push-watch", daemon=True).start()

    def _read(self) -> None:
        buf = b""
        try:
            for chunk in self.resp.stream(65536):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip() and self._event(json.loads(line)):
                        return
            self.error = "the watch ended before the Deployment's generation grew"
        except Exception as err:  # noqa: BLE001 - reported by the waiter
            if not self.done.is_set():
                self.error = f"{type(err).__name__}: {err}"
        finally:
            self.done.set()

    def _event(self, event: dict) -> bool:
        obj = event.get("object") or {}
        if event.get("type") == "ERROR":
            self.error = f"watch error: {obj.get('message', obj)}"
            return True
        if (obj.get("metadata") or {}).get("generation", 0) > self.gen:
            self.at = time.monotonic()
            self.counts = self.api.request_counts()
            self.image = obj["spec"]["template"]["spec"]["containers"][0]["image"]
            return True
        return False

    def wait(self, timeout: float) -> float:
        if not self.done.wait(timeout) or self.at is None:
            raise RuntimeError(f"the changed Deployment was not applied within {timeout:.0f}s: {self.error or 'timeout'}")
        return self.at

    def close(self) -> None:
        try:
            self.resp.release_conn()
            self.resp.close()
        except Exception:  # noqa: BLE001
            pass


def status_writes(before: dict, after: dict) -> int:
    """Writes of ``applications/status`` (PATCH, APPLY, PUT) between two readings."""
    grown = stats.delta(before, after)
    return int(sum(c for (verb, _g, res, sub), c in grown.items()
                   if res == "applications" and sub == "status" and verb in stats.WRITE_VERBS))


# -- the step --------------------------------------------------------------------------------

def measure(bench, n: int, tree: agent_run.Tree, repo: Path, cache: Path, logs: Path, rnd: int) -> None:
    """The push-to-live step of one round (see the module docstring); figures into ``bench``."""
    variant = f"agent:{tree.label}"
    if not supported(tree):
        note = f"{variant}: `run` has no {WEBHOOK_FLAG}: push to live not measured"
        if note not in bench.notes:
            bench.notes.append(note)
        bench.say(f"  {note}")
        return
    bench.check_time()
    secret = secrets.token_hex(16).encode()
    secret_file = bench.work / f"webhook-secret-{n}-{tree.label}-{rnd}"
    secret_file.write_bytes(secret)
    os.chmod(secret_file, 0o600)
    port = free_port()
    args = run_args(repo, bench.cluster.kubeconfig, cache, port, secret_file, bench.concurrency, tree)
    run = Run(tree, args, logs / f"{n}-{tree.label}-{rnd}-run.log", port, secret)
    try:
        try:
            _steps(bench, n, variant, repo, run)
        except RuntimeError:  # a wait cut short by --stop-at: stop as every other step does
            bench.check_time()
            raise
        code, seconds = run.stop()
        bench.samples.add(n, variant, "run_peak_rss_mib", run.peak_kib / 1024)
        bench.details[f"{n}|{variant}|run_stop"] = {"exit": code, "seconds": round(seconds, 2)}
        if code != 0:
            why = f"did not exit within {STOP_TIMEOUT:.0f}s of SIGTERM" if code is None else f"exited {code} on SIGTERM"
            raise RuntimeError(f"{variant} run {why}:\n{run.tail()}")
        bench.say(f"  {variant} run stopped by SIGTERM in {seconds:.2f}s (exit 0), peak RSS {run.peak_kib / 1024:.0f} MiB")
    finally:
        run.kill()


def _steps(bench, n: int, variant: str, repo: Path, run: Run) -> None:
    first = run.wait_pass(bench.timeout(3600))
    bench.say(f"  {variant} run: first pass ({first.get('trigger')}) {first.get('duration_seconds')}s")
    run.quiet()
    _nochange(bench, n, variant, run)
    _pushes(bench, n, variant, repo, run)
    _floor(bench, n, variant, repo)


def _webhook_pass(bench, run: Run) -> dict:
    code = run.hook()
    if code != 202:
        raise RuntimeError(f"the push webhook answered {code}, not 202:\n{run.tail()}")
    return run.wait_pass(bench.timeout(3600), trigger="webhook")


def _nochange(bench, n: int, variant: str, run: Run) -> None:
    for _ in range(RUN_NOCHANGE):
        run.quiet()
        seen = len(run.passes)
        result: dict = {}

        def step():
            started = time.monotonic()
            record = result["pass"] = _webhook_pass(bench, run)
            bench.samples.add(n, variant, "run_nochange_wall_s", record["read_at"] - started)
            return float(record["duration_seconds"])

        bench.measure(n, variant, "run_nochange", step)
        lists = sum(c for (verb, _, _), c in bench.last_requests.items() if verb == "LIST")
        bench.samples.add(n, variant, "run_nochange_lists", lists)
        run.poll()
        others = [str(p.get("trigger")) for p in run.passes[seen:] if p is not result["pass"]]
        if others:
            bench.notes.append(f"N={n} {variant}: other passes ({', '.join(others)}) ran around a no-change "
                               "webhook pass; their requests are counted in it")


def _pushes(bench, n: int, variant: str, repo: Path, run: Run) -> None:
    rows = []
    run.quiet()
    for i in push_indices(n):
        bench.check_time()
        name, namespace = workload.app_name(i), workload.app_namespace(i, bench.prefix)
        path = repo / workload.app_file(i, bench.prefix)
        image = other_image(yaml.safe_load(path.read_text())["spec"]["image"])
        commit = workload.set_image(repo, i, bench.prefix, image)
        # the list's resourceVersion, not the object's: an object untouched for 10,000 status writes has
        # one the API server's watch cache no longer holds (410 Gone)
        listed = bench.api.request("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments"
                                          f"?fieldSelector=metadata.name%3D{name}")
        dep = listed["items"][0]
        watch = Applied(bench.api, namespace, name, listed["metadata"]["resourceVersion"],
                        dep["metadata"].get("generation", 1), bench.timeout(3600))
        try:
            seen = len(run.passes)
            before = bench.api.request_counts()
            t0 = time.monotonic()
            code = run.hook()
            if code != 202:
                raise RuntimeError(f"the push webhook answered {code}, not 202:\n{run.tail()}")
            end = run.wait_pass(bench.timeout(3600), trigger="webhook")
            applied = watch.wait(60.0)  # the pass has ended: its apply is long done
        finally:
            watch.close()
        at_end = bench.api.request_counts()
        bench.expect(f"{name}'s Deployment got {image}", watch.image == image)
        writes = status_writes(before, watch.counts)
        whole = stats.client_requests(stats.delta(before, at_end))  # the POST to the pass's end
        row = {"i": i, "commit": commit[:12], "pass_commit": (end.get("commit") or "")[:12],
               "applied_s": round(applied - t0, 3), "passend_s": round(end["read_at"] - t0, 3),
               "pass_duration_s": end.get("duration_seconds"), "status_writes_before_applied": writes,
               "status_writes_by_pass_end": status_writes(before, at_end), "requests_by_pass_end": stats.describe(whole),
               "other_passes": [p.get("trigger") for p in run.passes[seen:] if p is not end]}
        after = len(run.passes)
        run.quiet()  # the passes the push's own changes set off (watch), before the next push
        row["passes_after"] = [f"{p.get('trigger')} {p.get('duration_seconds')}s" for p in run.passes[after:]]
        row["requests_after"] = stats.describe(stats.client_requests(stats.delta(at_end, bench.api.request_counts())))
        rows.append(row)
        if row["pass_commit"] != row["commit"]:
            bench.notes.append(f"N={n} {variant}: the webhook pass after pushing {commit[:12]} synced "
                               f"{row['pass_commit'] or 'no commit'}")
        bench.samples.add(n, variant, "push_applied_s", applied - t0)
        bench.samples.add(n, variant, "push_passend_s", end["read_at"] - t0)
        bench.samples.add(n, variant, "push_status_share", writes / n)
        bench.say(f"  {variant} push {len(rows)}/{len(push_indices(n))} ({name}): applied {applied - t0:.2f}s, "
                  f"pass end {end['read_at'] - t0:.2f}s, {writes} status writes before applied, "
                  f"{row['status_writes_by_pass_end']} by the pass's end"
                  + (f", other passes: {row['other_passes']}" if row["other_passes"] else "")
                  + (f"; then: {', '.join(row['passes_after'])}" if row["passes_after"] else ""))
        bench.details.setdefault(f"{n}|{variant}|push", []).append(row)


def _floor(bench, n: int, variant: str, repo: Path) -> None:
    i = push_indices(n)[-1]
    path = repo / workload.app_file(i, bench.prefix)
    times = []
    for _ in range(FLOOR_REPEATS):
        started = time.monotonic()
        bench.cluster.kubectl("apply", "--server-side", "--dry-run=server", "--force-conflicts", "-f", str(path),
                              timeout=bench.timeout(600))
        times.append(time.monotonic() - started)
        bench.samples.add(n, variant, "push_floor_s", times[-1])
    bench.say(f"  {variant} floor (kubectl apply --server-side --dry-run=server, one Application): "
              f"{statistics.median(times):.3f}s median of {len(times)}")
