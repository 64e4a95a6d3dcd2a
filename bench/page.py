"""The status page's figure (issue 31): the list page's server time at N Applications, and its weight.

Why without the control plane: a page request reads only ``run``'s watch cache (``agent.server.cache``)
and its Git mirror, never the API server (``tests/test_status_page.py`` checks that), so its time
depends on N alone. The cache is filled with N Applications shaped as the agent writes them (status
with health, four conditions, five history entries, commits; 10 namespaces) and served by the real
``agent.server.uiserver`` on loopback.

Figures per N, each the median (and 90th percentile) over ``REQUESTS`` requests of ``/`` (default
query: 50 rows, sorted by name):

- ``server_ms``: ``uiserver.answer`` in process, one Application changed in the cache before each
  request (a watch event between any two requests: the list is rebuilt, that one row made again);
- ``server_warm_ms``: the same with an unchanged cache (only filter, sort, page and render);
- ``server_first_ms``: the first request after the cache was filled (every row made), once;
- ``http_ms``: a whole HTTP GET over loopback (``urllib``), one Application changed before each;
- ``page_bytes``: the HTML of ``/`` (50 rows) and ``/?per=200``; ``api_bytes``: ``/api/v1/applications``;
  ``static_bytes``: the script and style sheet, fetched once.
"""

from __future__ import annotations

import statistics
import time
import urllib.request

REQUESTS = 100
SHA = "0123456789abcdef0123456789abcdef01234567"


def application(i: int) -> dict:
    """One Application as the agent leaves it after a pass (health, conditions, history)."""
    ns, name = f"bench-{i % 10}", f"app-{i:05d}"
    when = "2026-12-05T00:00:00Z"
    conds = [{"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": when,
              "observedGeneration": 1}
             for t, r, m in (("Ready", "Healthy", "all children healthy"), ("Synced", "Synced", "applied"))]
    history = [{"digest": f"sha256:{k}{SHA}", "revision": SHA, "firstSyncedAt": when, "lastSyncedAt": when,
                "passes": 3} for k in range(5)]
    return {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{i}", "resourceVersion": str(i + 1),
                         "generation": 1, "creationTimestamp": when,
                         "labels": {"app.kubernetes.io/managed-by": "gitops-agent", "heumsi.github.io/source": "src"},
                         "annotations": {"heumsi.github.io/source-commit": SHA,
                                         "heumsi.github.io/source-path": f"apps/{name}.yaml"}},
            "spec": {"image": "nginx:1.25", "replicas": 0, "port": 8080},
            "status": {"observedGeneration": 1, "lastSyncedCommit": SHA, "lastSyncedCommitShort": SHA[:7],
                       "lastAttemptedCommit": SHA, "lastChangedCommit": SHA, "lastChangedCommitShort": SHA[:7],
                       "history": history, "lastSyncTime": when, "sourcePath": f"apps/{name}.yaml",
                       "deployment": name, "service": name, "replicas": 0, "readyReplicas": 0,
                       "health": {"status": "Healthy" if i % 7 else "Progressing", "message": "all children healthy"},
                       "conditions": conds}}


def _median_p90(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(0.9 * (len(ordered) - 1))]


def measure(n: int, requests: int = REQUESTS) -> dict:
    """The figures of the module docstring at ``n`` Applications."""
    from agent.server import cache, gitinfo, ui, uiserver

    store = cache.Cache()
    store.listed("Application", [application(i) for i in range(n)])
    source = ui.Source(store, None, gitinfo.Commits(None), repo_url="https://github.com/example/apps.git")
    cold, warm, http = [], [], []
    start = time.perf_counter()
    uiserver.answer(source, "/", "")
    first = (time.perf_counter() - start) * 1000
    changes = iter(range(n, n + 3 * requests))

    def change() -> None:  # a watch event: one Application's newer copy
        i = next(changes)
        app = application(i % n)
        app["metadata"]["resourceVersion"] = str(n + i + 1)
        store.seen(app)
    for _ in range(requests):
        change()
        start = time.perf_counter()
        uiserver.answer(source, "/", "")
        cold.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        uiserver.answer(source, "/", "")
        warm.append((time.perf_counter() - start) * 1000)
    server = uiserver.serve("127.0.0.1:0", source, None, False)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    get = lambda path: urllib.request.urlopen(base + path, timeout=60).read()  # noqa: E731
    try:
        for _ in range(requests):
            change()
            start = time.perf_counter()
            get("/")
            http.append((time.perf_counter() - start) * 1000)
        weights = {"page_bytes": len(get("/")), "page_200_bytes": len(get("/?per=200")),
                   "api_bytes": len(get("/api/v1/applications")),
                   "static_bytes": len(get("/static/page.js")) + len(get("/static/page.css"))}
    finally:
        server.shutdown()
        server.server_close()
    out = {"n": n, "requests": requests, "server_first_ms": round(first, 2), **weights}
    for name, values in (("server_ms", cold), ("server_warm_ms", warm), ("http_ms", http)):
        out[name], out[name.replace("_ms", "_p90_ms")] = (round(v, 2) for v in _median_p90(values))
    return out


def table(rows: list[dict]) -> list[str]:
    """BENCHMARKS.md's lines for the page's figures."""
    if not rows:
        return ["Not measured in this run (`python -m bench page`).", ""]
    lines = ["| N | server, rows rebuilt (median / p90) | server, rows reused | HTTP GET on loopback | "
             "page `/` (50 rows) | `/?per=200` | JSON | script + style |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']:,} | {r['server_ms']:.1f} / {r['server_p90_ms']:.1f} ms | {r['server_warm_ms']:.1f} ms"
                     f" | {r['http_ms']:.1f} ms | {r['page_bytes'] / 1024:.0f} KB | {r['page_200_bytes'] / 1024:.0f} KB"
                     f" | {r['api_bytes'] / 1024:.0f} KB | {r['static_bytes'] / 1024:.0f} KB |")
    worst = max(rows, key=lambda r: r["n"])
    ok = worst["server_ms"] < 100 and worst["page_bytes"] < 300 * 1024
    lines += ["", f"Target (issue 31): under 100 ms at 10,000 and under 300 KB. At N = {worst['n']:,}: "
              f"{worst['server_ms']:.1f} ms, {worst['page_bytes'] / 1024:.0f} KB: {'met' if ok else 'NOT met'}. "
              "Argo CD's list page: 35 s for 8,000 applications (argo-cd#9575), 2 min for 4,200 (#15276).", ""]
    return lines
