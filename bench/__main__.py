"""``python -m bench`` (``make bench``): the agent against kubectl and the plain SSA loop.

Starts its own local control plane (``tests.cluster``, state under /tmp) unless ``--state-dir``
names a running one, measures every size, writes ``bench/results.json``, ``BENCHMARKS.md`` and
``bench/pass-time.png`` and stops the control plane it started. Environment: ``BENCH_N``
(sizes, comma-separated), ``BENCH_REPEATS``, ``BENCH_AGENT_TREE`` (a second agent checkout to
compare with this one, ``PATH`` or ``LABEL=PATH``; this one's label: ``BENCH_THIS_LABEL``), ``BENCH_CONCURRENCY``, ``BENCH_SCALE_OUT_N``, ``BENCH_STOP_AT``, ``BENCH_BASELINE_MAX_N`` (kubectl and the loop
only up to this N).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import agent_run, page, report, stats, workload
from .api import Api
from .run import Bench, OutOfTime

ROOT = Path(__file__).resolve().parent.parent


def _sizes(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: must be comma-separated whole numbers") from None
    if not values or any(v < 1 or v > 100000 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: sizes must be 1 to 100000")
    return values


def _stop_at(text: str) -> datetime.datetime | None:
    if not text:
        return None
    try:
        clock = datetime.datetime.strptime(text, "%H:%M")
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: must be HH:MM (UTC)") from None
    now = datetime.datetime.now(datetime.timezone.utc)
    at = now.replace(hour=clock.hour, minute=clock.minute, second=0, microsecond=0)
    return at if at > now else at + datetime.timedelta(days=1)  # the next time the clock shows it


def parse(argv=None) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=_sizes, default=env("BENCH_N", "100,1000"), help="sizes (default: 100,1000)")
    p.add_argument("--repeats", type=_sizes, default=env("BENCH_REPEATS", ""),
                   help="rounds per size, one number for all or one per size (default: 3 to N=100, "
                        "2 to N=1,000, 1 above); the scale-out takes the last")
    p.add_argument("--agent-tree", action="append", default=[],
                   help="another agent checkout to measure beside this one, PATH or LABEL=PATH (repeatable) "
                        "[env BENCH_AGENT_TREE; this checkout's label: BENCH_THIS_LABEL, default this]")
    p.add_argument("--concurrency", type=int, default=int(env("BENCH_CONCURRENCY")) if env("BENCH_CONCURRENCY") else None,
                   help="passed to agents whose sync takes --concurrency (default: their own default)")
    p.add_argument("--threads", type=int, default=8, help="threads of the plain SSA loop (default: 8)")
    p.add_argument("--scale-out-n", type=int, default=int(env("BENCH_SCALE_OUT_N", "0")),
                   help="also measure two agents on halves against one at this N (default: off)")
    p.add_argument("--scale-out-tree", default=env("BENCH_SCALE_OUT_TREE", ""),
                   help="label of the tree for the scale-out (default: the first)")
    p.add_argument("--profile-n", type=int, default=int(env("BENCH_PROFILE_N", "-1")),
                   help="N of the cProfile'd cold pass (default: the largest size; 0: none)")
    p.add_argument("--page-n", type=_sizes, default=env("BENCH_PAGE_N", "1000,10000"),
                   help="sizes of the status page's figure (bench/page.py; no control plane) (default: 1000,10000)")
    p.add_argument("--stop-at", type=_stop_at, default=env("BENCH_STOP_AT", ""),
                   help="HH:MM UTC: abandon what is still running then, keep what was measured")
    p.add_argument("--state-dir", default=env("BENCH_STATE_DIR", ""),
                   help="a running control plane to reuse (default: start one under /tmp, stop it after)")
    p.add_argument("--out", default=env("BENCH_OUT", str(ROOT)), help="where BENCHMARKS.md goes (default: the checkout) [env BENCH_OUT]")
    opts = p.parse_args(argv)
    if isinstance(opts.page_n, str):
        opts.page_n = _sizes(opts.page_n)
    if isinstance(opts.n, str):
        opts.n = _sizes(opts.n)
    if isinstance(opts.repeats, str):
        opts.repeats = _sizes(opts.repeats) if opts.repeats else []
    if len(opts.repeats) not in (0, 1, len(opts.n)):
        p.error(f"--repeats {opts.repeats} is not allowed: one number, or one per size ({len(opts.n)})")
    if isinstance(opts.stop_at, str):
        opts.stop_at = _stop_at(opts.stop_at)
    if env("BENCH_AGENT_TREE"):
        opts.agent_tree.append(env("BENCH_AGENT_TREE"))
    return opts


def rounds(repeats: list[int], sizes: list[int], n: int) -> int:
    """Rounds at size ``n``: the one given for all, the one given for ``n``, or the default."""
    if not repeats:
        return stats.default_repeats(n)
    return repeats[0] if len(repeats) == 1 else repeats[sizes.index(n)]


def machine(api: Api) -> dict:
    mem_kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal"))
    version = api.request("GET", "/version").get("gitVersion", "?")
    return {"cores": os.cpu_count(), "memory_gib": mem_kib / 1024 / 1024, "python": platform.python_version(),
            "platform": f"{platform.system()} {platform.release()} {platform.machine()}", "kubernetes": version}


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main(argv=None) -> int:
    opts = parse(argv)
    sys.path.insert(0, str(ROOT))
    from tests import cluster as cluster_mod

    started = time.monotonic()
    own = not opts.state_dir
    state = Path(opts.state_dir or tempfile.mkdtemp(prefix="bench-cluster-", dir="/tmp"))
    if (state / "pids.json").exists():
        cluster = cluster_mod.attach(state)
        own = False
    else:
        print(f"bench: starting a control plane in {state}", file=sys.stderr)
        cluster = cluster_mod.up(state)
    work = Path(tempfile.mkdtemp(prefix="bench-work-", dir="/tmp"))
    try:
        cluster.kubectl("apply", "--server-side", "-f", str(ROOT / "crd.yaml"))
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/applications.heumsi.github.io")
        _wait_for_garbage_collector(cluster)
        trees = [agent_run.Tree.at(os.environ.get("BENCH_THIS_LABEL", "this"), ROOT)]
        for i, spec in enumerate(opts.agent_tree):
            label, sep, path = spec.partition("=")
            if not sep:
                label, path = Path(spec).name or f"other{i}", spec
            trees.append(agent_run.Tree.at(label, Path(path)))
        api = Api(cluster.kubeconfig, threads=opts.threads)
        bench = Bench(api=api, cluster=cluster, work=work, trees=trees, concurrency=opts.concurrency,
                      threads=opts.threads, stop_at=opts.stop_at, log=sys.stderr,
                      baseline_max_n=int(os.environ.get("BENCH_BASELINE_MAX_N", "0") or 0))
        results = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                   "command": "make bench" + "".join(
                       f" {k}={shlex.quote(os.environ[k])}" for k in sorted(os.environ) if k.startswith("BENCH_")),
                   "argv": sys.argv[1:], "machine": machine(api), "load_start": uptime(),
                   "trees": [{"label": t.label, "path": str(t.path), "commit": t.commit,
                              "concurrency_flag": t.concurrency_flag} for t in trees],
                   "concurrency": opts.concurrency, "repeats": {}, "incomplete": []}
        results["page"] = measure_page(opts.page_n)  # cheap, and needs no control plane
        bench.remove_leftovers()
        for t in trees:
            bench.say(f"agent:{t.label} = {t.path} at {t.commit} ({t.python}); --concurrency: {t.concurrency_flag}")
        def checkpoint() -> None:  # everything so far, so an interrupted run still leaves its figures
            results.update(load_end=uptime(), elapsed_s=time.monotonic() - started, details=bench.details,
                           notes=bench.notes, samples=bench.samples.as_rows())
            write(results, bench.samples, Path(opts.out))

        try:
            for n in opts.n:
                repeats = rounds(opts.repeats, opts.n, n)
                results["repeats"][f"{n:,}"] = repeats
                try:
                    bench.size(n, repeats)
                except OutOfTime as err:
                    results["incomplete"].append(f"N={n}: {err}")
                    bench.say(f"N={n} abandoned: {err}")
                checkpoint()
            profile_n = max(opts.n) if opts.profile_n < 0 else opts.profile_n
            if profile_n:
                try:
                    results["profiles"], results["profile_n"] = bench.profile(profile_n), profile_n
                except OutOfTime as err:
                    results["incomplete"].append(f"profile: {err}")
                checkpoint()
            if opts.scale_out_n:
                tree = next((t for t in trees if t.label == opts.scale_out_tree), trees[0])
                try:
                    info = bench.scale_out(opts.scale_out_n, tree,
                                           rounds(opts.repeats[-1:], [opts.scale_out_n], opts.scale_out_n))
                    info["halves"] = list(workload.HALVES)
                    results["scale_out"] = info
                except OutOfTime as err:
                    results["incomplete"].append(f"scale-out: {err}")
            bench.clean()
        except (Exception, KeyboardInterrupt) as err:  # keep what was measured, then report the failure
            results["incomplete"].append(f"stopped by {type(err).__name__}: {str(err)[:300]}")
            checkpoint()
            raise
        checkpoint()
    finally:
        if own:
            cluster_mod.down(state)
    print(f"bench: done in {(time.monotonic() - started) / 60:.1f} min; see {Path(opts.out) / 'BENCHMARKS.md'}",
          file=sys.stderr)
    return 0


GC_DISCOVERY = 35.0  # seconds: the garbage collector re-reads the API's resources every 30 s


def _wait_for_garbage_collector(cluster) -> None:
    """Wait until the CRD is older than the garbage collector's discovery period: before the
    collector watches Applications it GETs every child's owner to check it exists, requests
    that would be counted against the first client measured."""
    created = cluster.kubectl("get", "crd", "applications.heumsi.github.io", "-o",
                              "jsonpath={.metadata.creationTimestamp}").stdout.strip()
    age = (datetime.datetime.now(datetime.timezone.utc)
           - datetime.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc))
    if age.total_seconds() < GC_DISCOVERY:
        time.sleep(GC_DISCOVERY - age.total_seconds())


def write(results: dict, samples: stats.Samples, out: Path) -> None:
    """results.json, the plot and BENCHMARKS.md (notes below its marker kept)."""
    (out / "bench").mkdir(parents=True, exist_ok=True)
    (out / "bench" / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    note = report.plot(samples, out / "bench" / "pass-time.png")
    if note:
        results.setdefault("notes", []).append(note)
    target = out / "BENCHMARKS.md"
    old = target.read_text() if target.exists() else None
    text = report.markdown(results, samples, old)
    extra = results.get("notes", []) + results.get("incomplete", [])
    if extra:
        text = text.replace("## Targets (issue 11)", "Notes of this run:\n\n" + "\n".join(f"- {e}" for e in extra)
                            + "\n\n## Targets (issue 11)", 1)
    target.write_text(text)


def measure_page(sizes: list[int]) -> list[dict]:
    """The status page's figures (``bench/page.py``) at each of ``sizes``."""
    rows = []
    for n in sizes:
        rows.append(page.measure(n))
        print(f"bench: status page at N={n:,}: {rows[-1]['server_ms']} ms median, "
              f"{rows[-1]['page_bytes'] / 1024:.0f} KB", file=sys.stderr)
    return rows


def rewrite(results_path: Path, out: Path) -> None:
    """Render BENCHMARKS.md and the plot again from a saved results.json."""
    results = json.loads(results_path.read_text())
    samples = stats.Samples()
    for row in results["samples"]:
        for value in row["values"]:
            samples.add(row["n"], row["variant"], row["figure"], value)
    write(results, samples, out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["page"]:  # only the status page's figures, into the saved results
        sys.path.insert(0, str(ROOT))
        saved = json.loads((ROOT / "bench" / "results.json").read_text())
        saved["page"] = measure_page(_sizes(os.environ.get("BENCH_PAGE_N", "1000,10000")))
        (ROOT / "bench" / "results.json").write_text(json.dumps(saved, indent=1, default=str) + "\n")
        rewrite(ROOT / "bench" / "results.json", ROOT)
        sys.exit(0)
    if sys.argv[1:2] == ["render"]:
        rewrite(ROOT / "bench" / "results.json", ROOT)
        sys.exit(0)
    sys.exit(main())
