"""Pure bookkeeping of the benchmark: the run order, medians, the scaling fit, request counts.

Why a module of its own: these are the rules a reader of BENCHMARKS.md has to trust (which
figure is a median of what, which requests are the client's), so they are plain functions over
plain data, unit-tested in tests/unit/test_bench_stats.py, with no cluster and no clock.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

CLIENT_RESOURCES = frozenset({"applications", "deployments", "services", "events", "namespaces"})
"""Resources the agent, kubectl and the plain loop touch; requests to any other resource
(replicasets, leases, nodes, endpoints...) come from the controllers, kwok or the API server
itself and are never counted for a client."""
CONTROLLER_VERBS = frozenset({"UPDATE", "WATCH", "CONNECT"})
"""Verbs no client under test sends (the agent and kubectl write with APPLY, PATCH, POST and
DELETE and read with LIST and GET; none of them watches in one pass); the deployment
controller's PUTs of ``deployments/status`` and informer watches use them."""
WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"})
_LINE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def median(values: list[float]) -> float:
    """The median of ``values`` (the mean of the two middle ones for an even count).
    Raises ValueError for an empty list."""
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def fit_exponent(ns: list[float], times: list[float]) -> float:
    """The exponent ``b`` of ``time = a * N**b``: the least-squares slope of log(time) over
    log(N). Needs at least two distinct N and positive values, else ValueError. 1.0 is linear;
    the issue's target for the cold pass is 1.05 or less from N = 1,000 to 10,000."""
    if len(ns) != len(times):
        raise ValueError("ns and times differ in length")
    points = [(math.log(n), math.log(t)) for n, t in zip(ns, times) if n > 0 and t > 0]
    if len(points) != len(ns) or len({x for x, _ in points}) < 2:
        raise ValueError("an exponent needs positive values at two or more distinct N")
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return sxy / sxx


def interleave(variants: list[str], repeats: int) -> list[tuple[int, str]]:
    """The run order: every variant once per round, rounds one after another (A/B/A/B), so a
    change in the machine's load hits every variant alike. Returns ``[(round, variant), ...]``
    with rounds counted from 0; ``repeats`` below 1 is a ValueError."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    return [(r, v) for r in range(repeats) for v in variants]


def default_repeats(n: int) -> int:
    """Rounds a size can afford on the 2-core machine when the user sets none: 3 up to
    N = 100, 2 up to N = 1,000, 1 above (N = 10,000 runs once)."""
    if n <= 100:
        return 3
    if n <= 1000:
        return 2
    return 1


@dataclass
class Samples:
    """Figures gathered over rounds: ``add(n, variant, figure, value)``; ``median(...)`` and
    ``values(...)`` read them back (seconds, bytes or counts, as added)."""

    data: dict = field(default_factory=lambda: defaultdict(list))

    def add(self, n: int, variant: str, figure: str, value: float) -> None:
        self.data[(n, variant, figure)].append(value)

    def values(self, n: int, variant: str, figure: str) -> list[float]:
        return list(self.data.get((n, variant, figure), []))

    def median(self, n: int, variant: str, figure: str) -> float | None:
        """The median over rounds, or None when the figure was never measured."""
        values = self.data.get((n, variant, figure))
        return median(values) if values else None

    def as_rows(self) -> list[dict]:
        """JSON-ready rows: n, variant, figure, values and their median."""
        return [{"n": n, "variant": v, "figure": f, "values": vals, "median": median(vals)}
                for (n, v, f), vals in sorted(self.data.items()) if vals]


def parse_request_total(text: str) -> dict[tuple[str, str, str, str], float]:
    """``apiserver_request_total`` from the API server's /metrics text, summed over the labels
    that do not matter here (code, scope, component, version): {(verb, group, resource,
    subresource): count}. Dry-run requests (a non-empty ``dry_run`` label) are left out."""
    out: dict[tuple[str, str, str, str], float] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        if labels.get("dry_run"):
            continue
        key = (labels.get("verb", ""), labels.get("group", ""), labels.get("resource", ""),
               labels.get("subresource", ""))
        out[key] = out.get(key, 0.0) + float(match["value"])
    return out


def delta(before: dict, after: dict) -> dict:
    """Counts that grew between two ``parse_request_total`` readings (after minus before; keys
    new in ``after`` count from 0). A counter that went down (an API server restart) is an
    error: ValueError, since the figures would be wrong."""
    out = {}
    for key, value in after.items():
        grown = value - before.get(key, 0.0)
        if grown < 0:
            raise ValueError(f"counter {key} went down ({before[key]} -> {value}): the API server restarted")
        if grown > 0:
            out[key] = grown
    return out


def client_requests(grown: dict) -> dict[tuple[str, str, str], int]:
    """The requests a client under test sent, from a ``delta``: only ``CLIENT_RESOURCES``,
    without ``CONTROLLER_VERBS`` and without the controllers' ``deployments/status``. Returns
    {(verb, resource, subresource): count}."""
    out: dict[tuple[str, str, str], int] = {}
    for (verb, _group, resource, sub), count in grown.items():
        if resource not in CLIENT_RESOURCES or verb in CONTROLLER_VERBS:
            continue
        if resource == "deployments" and sub == "status":
            continue
        key = (verb, resource, sub)
        out[key] = out.get(key, 0) + int(count)
    return out


def totals(requests: dict[tuple[str, str, str], int]) -> dict[str, int]:
    """``{"requests": all, "writes": writes, "reads": the rest, "events": Event writes}`` of a
    ``client_requests`` result."""
    writes = sum(c for (verb, _, _), c in requests.items() if verb in WRITE_VERBS)
    events = sum(c for (verb, res, _), c in requests.items() if verb in WRITE_VERBS and res == "events")
    total = sum(requests.values())
    return {"requests": total, "writes": writes, "reads": total - writes, "events": events}


def per_pass(requests: dict[tuple[str, str, str], int], own_events: int) -> int:
    """The requests of a ``client_requests`` result that are the pass's, not any one
    Application's: every read (a LIST per kind, one per kind and namespace that gets a create),
    the namespaces created, and Events beyond ``own_events`` (the agent's own; the rest are the
    controllers', which the API server's counter does not tell apart)."""
    reads = sum(c for (verb, _, _), c in requests.items() if verb not in WRITE_VERBS)
    namespaces = sum(c for (verb, res, _), c in requests.items() if verb in WRITE_VERBS and res == "namespaces")
    events = totals(requests)["events"]
    return reads + namespaces + max(0, events - own_events)


def describe(requests: dict[tuple[str, str, str], int]) -> str:
    """One line for a table cell, largest first: ``APPLY applications 100, LIST services 1``
    (a subresource as ``applications/status``)."""
    items = sorted(requests.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{verb} {res}{'/' + sub if sub else ''} {count}" for (verb, res, sub), count in items)


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, or None when either is missing or ``b`` is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b
