"""BENCHMARKS.md and the plot from one run's results (the JSON ``bench/results.json``).

The file is rewritten by every run; hand-written observations go below the line
``<!-- notes -->`` and are kept. matplotlib is the optional ``bench`` extra: without it the
plot is skipped with a note.
"""

from __future__ import annotations

from pathlib import Path

from . import page, push, stats

NOTES_MARK = "<!-- notes -->"
PHASES = [("cold", "cold pass"), ("settle", "second pass (controllers caught up)"),
          ("nochange", "no-change pass"), ("changeone", "after a commit changing one Application"),
          ("handedit", "after one hand-edited child"), ("reapply", "re-apply")]


def _fmt(value, unit: str = "", digits: int = 2) -> str:
    if value is None:
        return "–"
    if unit == "int":
        return f"{int(round(value)):,}"
    return f"{value:.{digits}f}{unit}"


def _target(value, limit, below: bool = True) -> str:
    if value is None:
        return "–"
    ok = value <= limit if below else value >= limit
    return f"{value:.2f} ({'meets' if ok else 'misses'} {'≤' if below else '≥'} {limit:g})"


def sizes(samples: stats.Samples) -> list[int]:
    return sorted({n for (n, _, _) in samples.data})


def variants(samples: stats.Samples) -> list[str]:
    seen = []
    for (_, v, _) in samples.data:
        if v not in seen and not v.startswith("scale:"):
            seen.append(v)
    return sorted(seen, key=lambda v: (not v.startswith("agent:"), v == "loop", v))


def table(samples: stats.Samples, details: dict) -> list[str]:
    lines = ["| N | who | step | seconds (median) | rounds | requests | writes | Events | requests by verb and resource (last round) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n in sizes(samples):
        for v in variants(samples):
            for phase, title in PHASES:
                secs = samples.values(n, v, f"{phase}_s")
                if not secs:
                    continue
                lines.append(f"| {n:,} | {v} | {title} | {_fmt(stats.median(secs))} | {len(secs)} | "
                             f"{_fmt(samples.median(n, v, f'{phase}_requests'), 'int')} | "
                             f"{_fmt(samples.median(n, v, f'{phase}_writes'), 'int')} | "
                             f"{_fmt(samples.median(n, v, f'{phase}_events'), 'int')} | "
                             f"{details.get(f'{n}|{v}|{phase}', '')} |")
    return lines


def exponent(samples: stats.Samples, variant: str, figure: str = "cold_s") -> float | None:
    points = [(n, samples.median(n, variant, figure)) for n in sizes(samples)]
    points = [(n, t) for n, t in points if t]
    if len(points) < 2:
        return None
    return stats.fit_exponent([n for n, _ in points], [t for _, t in points])


def targets(samples: stats.Samples) -> list[str]:
    """The issue's target ratios per agent tree at each N (medians of one run)."""
    lines = ["| N | agent | cold / kubectl cold (≤ 0.6) | agent writes/s vs loop writes/s (≥ 0.8) | "
             "no-change / cold (≤ 0.05) | no-change / kubectl re-apply (≤ 0.1) | requests per Application, cold (≤ 5), and per pass | "
             "no-change requests (≤ 5), writes (0) | peak RSS MiB |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n in sizes(samples):
        for v in variants(samples):
            if not v.startswith("agent:"):
                continue
            m = lambda who, f: samples.median(n, who, f)
            cold, kcold, krea = m(v, "cold_s"), m("kubectl", "cold_s"), m("kubectl", "reapply_s")
            writes = stats.ratio(m(v, "cold_writes"), cold)
            loop_writes = stats.ratio(m("loop", "cold_writes"), m("loop", "cold_s"))
            wps = stats.ratio(writes, loop_writes)
            wps_text = "–" if wps is None else f"{writes:.0f} vs {loop_writes:.0f}: " + _target(wps, 0.8, below=False)
            per_pass = m(v, "cold_per_pass_requests")
            per_app = stats.ratio(m(v, "cold_requests") - (per_pass or 0), n) if m(v, "cold_requests") else None
            per_app_text = _target(per_app, 5) + ("" if per_pass is None else f", and {per_pass:,.0f} per pass")
            nochange = m(v, "nochange_requests")
            lines.append(
                f"| {n:,} | {v} | {_target(stats.ratio(cold, kcold), 0.6)} | {wps_text} | "
                f"{_target(stats.ratio(m(v, 'nochange_s'), cold), 0.05)} | "
                f"{_target(stats.ratio(m(v, 'nochange_s'), krea), 0.1)} | {per_app_text} | "
                f"{_fmt(nochange, 'int')}, {_fmt(m(v, 'nochange_writes'), 'int')} | "
                f"{_fmt(m(v, 'peak_rss_mib'), '', 0)} |")
    return lines


def exponents(samples: stats.Samples) -> list[str]:
    ns = sizes(samples)
    span = f"N = {ns[0]:,} to {ns[-1]:,}" if len(ns) > 1 else "one N only"
    lines = [f"Scaling exponent b of pass time = a·N^b (least-squares fit of log time over log N, medians, {span}; "
             "target for the agent's cold pass: ≤ 1.05 from 1,000 to 10,000):", ""]
    for v in variants(samples):
        cold = exponent(samples, v)
        lines.append(f"- {v}: cold {_fmt(cold)}" + (
            f", no-change {_fmt(exponent(samples, v, 'nochange_s'))}" if v.startswith("agent:") else
            f", re-apply {_fmt(exponent(samples, v, 'reapply_s'))}"))
    return lines


PUSH_TARGETS = ("Targets: push→applied median ≤ 1.5 s and ≤ 3× the floor at N = 10,000; run's no-change pass "
                "0 LIST requests, 0 writes and < 1 s; status writes before the changed child was applied < 5 % "
                "of N.")


def _median_max(values: list[float]) -> str:
    return f"{stats.median(values):.2f} / {max(values):.2f}" if values else "–"


def push_table(samples: stats.Samples, details: dict) -> list[str]:
    """The push-to-live table (``bench/push.py``): one row per N and agent tree that has it."""
    head = ["| N | agent | push→applied s (median / max) | push→pass end s (median / max) | floor: kubectl s (median) | "
            "applied ÷ floor | `sync --once` after a one-Application commit s | run's no-change pass s | "
            "its LIST requests, writes | status writes before the child was applied (share of N, median / max) | "
            "run's peak RSS MiB | no-change requests by verb and resource (last) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for n in sizes(samples):
        for v in variants(samples):
            applied = samples.values(n, v, "push_applied_s")
            if not v.startswith("agent:") or not (applied or samples.values(n, v, "run_nochange_s")):
                continue
            m = lambda f: samples.median(n, v, f)
            share = samples.values(n, v, "push_status_share")
            share_text = f"{stats.median(share):.1%} / {max(share):.1%}" if share else "–"
            rows.append(
                f"| {n:,} | {v} | {_median_max(applied)} | {_median_max(samples.values(n, v, 'push_passend_s'))} | "
                f"{_fmt(m('push_floor_s'))} | {_fmt(stats.ratio(m('push_applied_s'), m('push_floor_s')), '', 1)} | "
                f"{_fmt(m('changeone_s'))} | {_fmt(m('run_nochange_s'))} | "
                f"{_fmt(m('run_nochange_lists'), 'int')}, {_fmt(m('run_nochange_writes'), 'int')} | {share_text} | "
                f"{_fmt(m('run_peak_rss_mib'), '', 0)} | {details.get(f'{n}|{v}|run_nochange', '')} |")
    if not rows:
        return ["Not measured in this run.", ""]
    return [PUSH_TARGETS, "", *head, *rows, "", *memory_lines(samples)]


MEMORY_LIMITS = ((512, "512 Mi"), (1024, "1 Gi"))
"""The memory limits the sizing is given for: ``deploy/``'s, and twice it."""


def sizing(points: list[tuple[int, float]]) -> tuple[float, float] | None:
    """(MiB per Application, MiB at no Application) of ``run``'s peak RSS, the straight line
    through the smallest and the largest N of ``points`` ((N, peak MiB)); None with fewer than
    two sizes."""
    if len({n for n, _ in points}) < 2:
        return None
    (n0, m0), (n1, m1) = min(points), max(points)
    slope = (m1 - m0) / (n1 - n0)
    return slope, m0 - slope * n0


def memory_lines(samples: stats.Samples) -> list[str]:
    """``run``'s memory per Application and the Applications each limit fits (issue 48), per
    agent tree measured at two sizes or more."""
    out = []
    for v in variants(samples):
        points = [(n, m) for n in sizes(samples) if (m := samples.median(n, v, "run_peak_rss_mib")) is not None]
        line = sizing(points)
        if not v.startswith("agent:") or line is None:
            continue
        slope, start = line
        fits = ", ".join(f"{label}: about {int((limit - start) / slope):,}" if slope > 0 else f"{label}: –"
                         for limit, label in MEMORY_LIMITS)
        out += [f"Memory of `run` ({v}): {slope * 1024:.1f} KiB per Application over {start:.0f} MiB "
                f"(peak RSS, the line through N = {min(points)[0]:,} and {max(points)[0]:,}); Applications that "
                f"fit a limit: {fits}.", ""]
    return out


def scale_out(samples: stats.Samples, info: dict | None) -> list[str]:
    if not info:
        return ["Not measured in this run (`--scale-out-n`)."]
    n = info["n"]
    m = lambda who, f: samples.median(n, f"scale:{who}", f)
    lines = [f"N = {n:,}, agent:{info['tree']}, {info['repeats']} round(s), medians; two agents = "
             f"`--path {'` and `--path '.join(info['halves'])}` started at the same moment, each its own "
             "`--source-id` and cache; time = the slower of the two.", "",
             "| step | one agent on all (s) | two agents on halves (s) | two / one | requests one | requests two | peak RSS one / each of two (MiB) |",
             "|---|---|---|---|---|---|---|"]
    for phase, title in (("cold", "cold pass"), ("settle", "second pass"), ("nochange", "no-change pass")):
        one, two = m("one", f"{phase}_s"), m("two", f"{phase}_s")
        rss = ""
        if phase != "settle":
            rss = f"{_fmt(m('one', f'{phase}_rss_mib'), '', 0)} / {_fmt(m('two', f'{phase}_rss_mib'), '', 0)}"
        lines.append(f"| {title} | {_fmt(one)} | {_fmt(two)} | {_fmt(stats.ratio(two, one))} | "
                     f"{_fmt(m('one', f'{phase}_requests'), 'int')} | {_fmt(m('two', f'{phase}_requests'), 'int')} | {rss} |")
    return lines


def plot(samples: stats.Samples, target: Path) -> str | None:
    """Pass time against N (log-log) for every variant; returns a note when not drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[bench]'): no plot drawn"
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    styles = {"kubectl": ("tab:orange", "s"), "loop": ("tab:green", "^")}
    agent_colours = iter(["tab:blue", "tab:purple", "tab:red", "tab:brown"])
    for v in variants(samples):
        colour, marker = styles.get(v) or (next(agent_colours), "o")
        ns = [n for n in sizes(samples) if samples.median(n, v, "cold_s")]
        label = {"kubectl": "kubectl apply --server-side", "loop": "8-thread SSA loop (ceiling)"}.get(v, v)
        ax.plot(ns, [samples.median(n, v, "cold_s") for n in ns], marker=marker, color=colour,
                label=f"{label}, cold")
        if v == "loop":
            continue
        second = "nochange_s" if v.startswith("agent:") else "reapply_s"
        ns2 = [n for n in ns if samples.median(n, v, second)]
        ax.plot(ns2, [samples.median(n, v, second) for n in ns2], marker=marker, color=colour, linestyle="--",
                label=f"{label}, {'no-change' if v.startswith('agent:') else 're-apply'}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes(samples), [f"{n:,}" for n in sizes(samples)])
    ax.minorticks_off()
    ax.set_xlabel("Applications (N)")
    ax.set_ylabel("pass time (s, median)")
    ax.set_title("Pass time against N (local control plane, 2 cores)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(target)
    plt.close(fig)
    return None


def markdown(results: dict, samples: stats.Samples, old_text: str | None) -> str:
    m = results["machine"]
    trees = "\n".join(f"- `agent:{t['label']}`: {t['path']} at commit `{t['commit']}`"
                      f"{' (passed --concurrency ' + str(results['concurrency']) + ')' if t['concurrency_flag'] and results['concurrency'] else ''}"
                      f"{'' if t['concurrency_flag'] else ' (no --concurrency flag: serial writes)'}"
                      for t in results["trees"])
    profiles = []
    for label, prof in (results.get("profiles") or {}).items():
        profiles += [f"### agent:{label}, cold pass at N = {results['profile_n']:,} under cProfile "
                     f"({prof['seconds']:.1f} s with the profiler, exit {prof['code']})", "", "```", prof["top"], "```", ""]
    notes = old_text.split(NOTES_MARK, 1)[1].strip() if old_text and NOTES_MARK in old_text else ""
    parts = [
        "# Benchmarks", "",
        "Generated by `make bench` (the harness in `bench/`); rerun to refresh. Ratios within one run are",
        "what counts: the machine is shared, so absolute seconds move with its load.", "",
        "## Run", "",
        f"- date: {results['date']} (took {results['elapsed_s'] / 60:.1f} min)",
        f"- command: `{results['command']}`",
        f"- machine: {m['cores']} cores, {m['memory_gib']:.0f} GiB memory, {m['platform']}; Python {m['python']}; "
        f"Kubernetes {m['kubernetes']} (local control plane of `tests/cluster`, kwok node)",
        f"- load (uptime) at the start: {results['load_start']}; at the end: {results['load_end']}",
        f"- sizes: {', '.join(f'{n:,}' for n in sizes(samples))}; rounds per size: "
        f"{', '.join(f'{k}: {v}' for k, v in results['repeats'].items())}; order within a round: "
        f"{', '.join(variants(samples))} (A/B/A/B), every variant starting from no objects",
        trees, "",
        "## Targets (issue 11)", "", *targets(samples), "", *exponents(samples), "",
        "## Every figure", "",
        "Medians over rounds. Requests are the API server's own `apiserver_request_total` grown during the step, "
        "for applications, deployments, services, events and namespaces, without the controllers' "
        "`UPDATE`s, `WATCH`es and `deployments/status` (see `bench/stats.py`). kubectl's and the loop's cold step "
        "include one LIST of the Applications (their uids, for the children's ownerReferences).", "",
        *table(samples, results["details"]), "",
        "![pass time against N](bench/pass-time.png)", "",
        "## Push to live (issue 33)", "",
        "From `bench/push.py`, after each agent round's `sync --once` steps: the tree's `run` (webhook on, "
        "`--interval 3600`, JSON log) against the same repository and Git cache. No-change pass: a signed push "
        f"webhook with no new commit, {push.RUN_NOCHANGE} times; its `duration_seconds` and the API server's requests "
        f"during it. Pushes: {push.PUSHES} commits, each changing one Application's image (spread over the range), "
        "each followed by the webhook; *applied* = when a WATCH on that Application's Deployment (opened before the "
        "POST) delivers a higher `metadata.generation`; *pass end* = when the pass's log line is read (polled every "
        "10 ms); the status share = `applications/status` writes the API server counted between the POST and "
        "*applied*, over N. Floor: `kubectl apply --server-side --dry-run=server --force-conflicts` of the last "
        f"changed Application's file, {push.FLOOR_REPEATS} times, kubectl's start included (dry-run=server so the "
        "agent's state is not disturbed). Peak RSS: `run`'s `VmHWM` over the step. `run` must then exit 0 on "
        "SIGTERM. Medians and maxima over every push of every round.", "",
        *push_table(samples, results["details"]),
        "## Status page: the list's server time (issue 31)", "",
        "From `bench/page.py`: the cache of `run` filled with N Applications, `/` requested 100 times "
        "(one Application changed before each request); medians. A page request sends no request to the API "
        "server, so no control plane is involved.", "",
        *page.table(results.get("page") or []),
        "## Scale-out: two agents on disjoint paths against one", "", *scale_out(samples, results.get("scale_out")), "",
        "## Profile: top 20 functions by own time", "", *(profiles or ["Not measured in this run.", ""]),
        "## How it is measured", "",
        "- Workload: N Applications (replicas 0, port 8080, `nginx:1.25`) in 10 namespaces, one file each, "
        "in a real Git repository in a temporary directory; the agent syncs it with `sync --once` as a user "
        "runs it (a fresh Git cache for each cold pass, so the clone is part of it).",
        "- Agent steps per round: cold pass; the second pass once the deployment controller has observed "
        "every Deployment (health and status move to Ready); a no-change pass; a pass after a commit "
        "changing one Application's image; a pass after `kubectl-edit` set one Deployment's replicas to 1. "
        "Each step is checked (object counts, the new image, the edit undone).",
        "- kubectl: `kubectl apply --server-side` of the namespaces and Applications as the agent renders them, "
        "one LIST for their uids, then their Deployments and Services (from `agent/kinds/render.py`); re-apply = "
        "both files again.",
        "- loop: the same objects as raw `application/apply-patch+yaml` PATCH requests from 8 threads with "
        "kept-alive connections: the API server's ceiling on this machine.",
        "- Requests per Application: the cold pass's requests without those that are the pass's: its reads "
        "(one LIST per kind, and one per kind and namespace that gets a create), the namespaces it creates, and "
        "Events beyond the agent's own (counted by `source=gitops-agent`; the rest are the controllers').",
        "- Between rounds the 10 namespaces are deleted and waited for. Peak RSS is the agent process's own "
        "`VmHWM` (`/proc/PID/status`, read every 20 ms), without its Git child processes.",
        "", NOTES_MARK, "", notes, "",
    ]
    return "\n".join(parts)
