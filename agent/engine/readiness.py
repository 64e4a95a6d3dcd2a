"""``sync --once --wait``: after the pass, wait until its Applications are healthy, keeping their status true.

Why: a pass applies and returns; a Deployment it just applied may never become ready, and the
status the pass wrote is a snapshot (``Progressing``) taken before the pods were up. Like
``kubectl rollout status``, ``flux reconcile`` and ``argocd app wait``, the wait ends when every
Application the pass synced from Git is healthy (``Ready`` True), when one is ``Degraded`` or
``Stalled`` (waiting cannot help: only a person or a new commit can), or when the time is up.

While it waits it polls, every ``POLL_SECONDS``, with one LIST of Applications and one LIST per
child kind they use (the agent's ``managed-by`` label) in each namespace they are in (and one of
the agent's pods in a namespace where a Deployment's pods are made but not available:
``_with_pods``), and writes
each Application's status through ``statuswrite.write``, the pass's own status write, with the
pass's outcome: a child that became ready rewrites the Application's ``health`` and ``Ready``
condition, and a status that did not move sends nothing. A suspended Application, or one with a
child held by its annotation, is not waited for: the agent leaves it as it is.
"""

from __future__ import annotations

import datetime
import threading
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Callable

from agent.api.labels import AGENT_NAME, MANAGED_BY
from agent.api.objects import Obj
from agent.api.schema import GROUP, KIND
from agent.engine import backoff, conditions, plan, statuswrite
from agent.engine.report import Report
from agent.kinds import deployment, health as health_, registry
from agent.kube.cluster import ApiError, Cluster

POLL_SECONDS = 1.0
"""Seconds between two looks: a rollout on a real cluster takes seconds to minutes."""
DEFAULT_SECONDS = 300.0
"""``--wait`` without a value: 5 minutes, as ``flux reconcile`` and ``kubectl wait``'s usual timeout."""


class Wait(StrEnum):
    """``HEALTHY``, ``FAILED``, ``WAITING``: what one Application's status says for the wait
    (``state``), and the wait's ``verdict`` so far. ``TIMEOUT``, ``INTERRUPTED``, ``ERROR``: how a
    wait can end other than ``HEALTHY`` (all healthy) or ``FAILED`` (one Degraded or Stalled).
    A ``str``: it compares and serializes as its value."""

    HEALTHY = "healthy"
    FAILED = "failed"
    WAITING = "waiting"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"
    ERROR = "error"

OnChange = Callable[[str, Obj], object]
"""``on_change(key, health)``: told each new ``{"status", "message"}`` of an Application's health."""


def state(status: Obj | None) -> Wait:
    """``HEALTHY`` when the Application's ``status`` has ``Ready`` True; ``FAILED`` when its
    health is ``Degraded`` or its ``Stalled`` condition is True (kstatus: retrying cannot help);
    else ``WAITING`` (Progressing, Missing, no status yet). Pure."""
    status = status or {}
    found = {c.get("type"): c.get("status") for c in status.get("conditions") or [] if isinstance(c, dict)}
    if found.get(conditions.ConditionType.READY) == "True":
        return Wait.HEALTHY
    degraded = (status.get("health") or {}).get("status") == health_.Status.DEGRADED
    if degraded or found.get(conditions.ConditionType.STALLED) == "True":
        return Wait.FAILED
    return Wait.WAITING


def verdict(states: dict[str, Wait]) -> Wait:
    """The wait's result so far from each Application's ``state``: ``FAILED`` when any failed,
    ``HEALTHY`` when all are healthy (also when there are none), else ``WAITING``. Pure."""
    values = set(states.values())
    if Wait.FAILED in values:
        return Wait.FAILED
    return Wait.HEALTHY if values <= {Wait.HEALTHY} else Wait.WAITING


def count_ready(health: dict[str, Obj], failing: list[str]) -> int:
    """How many of the Applications in ``health`` (``namespace/name`` -> ``{status, message}``,
    ``Report.health``) are Ready: Healthy and not among ``failing`` (``Report.failing``), as the
    ``Ready`` condition says (``conditions.kstatus``). Pure."""
    failed = set(failing)
    return sum(h.get("status") == health_.Status.HEALTHY and key not in failed for key, h in health.items())


@dataclass
class Result:
    """How the wait ended: ``result`` (``HEALTHY``, ``FAILED``, ``TIMEOUT``, ``INTERRUPTED`` or
    ``ERROR``), ``seconds`` waited, ``timeout`` (seconds allowed), ``states`` (``namespace/name``
    -> ``state`` at the end), ``error`` (for ``ERROR``: the sentence), ``skipped``
    (``namespace/name`` of Applications of the pass not waited for: suspended or held)."""

    result: Wait
    seconds: float
    timeout: float
    states: dict[str, Wait] = field(default_factory=dict)
    error: str | None = None
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.result == Wait.HEALTHY

    def not_healthy(self) -> list[str]:
        """Sorted ``namespace/name`` of the Applications that were not healthy at the end."""
        return sorted(k for k, s in self.states.items() if s != Wait.HEALTHY)


def wait(kube: Cluster, report: Report, timeout: float, stop: threading.Event, *,
         poll: float = POLL_SECONDS, on_change: OnChange | None = None,
         keys: frozenset[str] | None = None) -> Result:
    """Wait up to ``timeout`` seconds for the Applications in ``report.synced`` to be healthy,
    rewriting their status as their children move (``statuswrite.write``) and keeping
    ``report.health`` current. ``stop`` (set by SIGTERM or SIGINT) ends the wait at once
    (``INTERRUPTED``). ``on_change(key, health)`` is called when an Application's health
    changes (``health``: ``{"status", "message"}``). Never raises for API faults: an API error
    ends the wait with ``ERROR``; a deleted Application counts as failed. ``keys``
    (``namespace/name``; None: all): the Applications of the pass chosen to wait for (``sync
    --wait -l``, ``--app``, ``-n``); the others are neither waited for nor written."""
    started = time.monotonic()
    chosen = {key: outcome for key, outcome in report.synced.items() if keys is None or key in keys}
    pending = {key: outcome for key, outcome in chosen.items() if outcome is not None}
    skipped = sorted(key for key, outcome in chosen.items() if outcome is None)
    states: dict[str, Wait] = {}

    def result(kind: Wait, error: str | None = None) -> Result:
        return Result(kind, time.monotonic() - started, timeout, dict(states), error, skipped)

    while True:
        try:
            _look(kube, report, pending, states, on_change)
        except ApiError as err:
            return result(Wait.ERROR, f"reading the Applications while waiting failed: {err}")
        now = verdict(states)
        if now != Wait.WAITING:
            return result(now)
        left = timeout - (time.monotonic() - started)
        if left <= 0:
            return result(Wait.TIMEOUT)
        if stop.wait(min(poll, left)):
            return result(Wait.INTERRUPTED)


def _look(kube: Cluster, report: Report, pending: dict[str, Any], states: dict[str, Wait],
          on_change: OnChange | None) -> None:
    """One look: list the Applications and their children in their namespaces, write each
    status that moved and record each Application's ``state``. Raises ``ApiError``."""
    namespaces = sorted({key.partition("/")[0] for key in pending})
    apps = {f"{ns}/{a['metadata']['name']}": a for ns in namespaces for a in kube.list_in(GROUP, KIND, ns)}
    kinds = {k for key in pending if (app := apps.get(key)) for k in registry.wanted(app.get("spec"))}
    children: dict[str, dict[str, Obj]] = {}
    for ns in namespaces:
        for kind in sorted(kinds, key=registry.CHILD_KINDS.index):
            for child in kube.list_in(kind.group, kind.kind, ns, f"{MANAGED_BY}={AGENT_NAME}"):
                if plan.owned(child):
                    children.setdefault(plan.owner_key(child), {})[registry.slot(child)] = child
    _with_pods(kube, {key: children[key] for key in pending if key in children}, apps)
    for key, outcome in sorted(pending.items()):
        app = apps.get(key)
        if app is None or app["metadata"].get("deletionTimestamp"):
            states[key] = Wait.FAILED
            gone = {"status": health_.Status.MISSING, "message": "the Application was deleted while waiting"}
            _moved(report, key, gone, on_change)
            continue
        kids = children.get(key, {})
        new = statuswrite.new_status(app, outcome, kids, False, backoff.ONE_SHOT)
        statuswrite.write(kube, report, key, app, outcome, kids)
        states[key] = state(new)
        _moved(report, key, new["health"], on_change)


def _with_pods(kube: Cluster, children: dict[str, dict[str, Obj]], apps: dict[str, Obj]) -> None:
    """Judge each Deployment of ``children`` (key -> kind -> child) in a rollout at the clock, as
    the pass does (``statuses``): one that waits for pods it has not got
    (``deployment.waits_for_pods``) with its pods (``deployment.with_pods``), one whose pods could
    not be made (``deployment.failed_create``) with none; each with its Application's
    ``spec.rollout.failAfterSeconds`` (``apps``: key -> live Application). So the wait keeps the
    reason the pass wrote, and ends (Degraded) as soon as a failure's grace is over. One LIST of
    the agent's pods per namespace that has a Deployment waiting for pods, none otherwise. A
    refused read (403) leaves the Deployments as they are. Changes ``children``."""
    slot = deployment.KIND.kind
    now = datetime.datetime.now(datetime.timezone.utc)

    def seconds(key: str) -> int:
        return deployment.fail_after((apps.get(key) or {}).get("spec"))

    for key, kinds in children.items():
        if deployment.failed_create(kinds.get(slot)):
            kinds[slot] = deployment.with_pods(kinds[slot], [], now, seconds(key))
    waiting = sorted(key for key, kinds in children.items() if deployment.waits_for_pods(kinds.get(slot)))
    for namespace in sorted({key.partition("/")[0] for key in waiting}):
        try:
            pods = kube.list_in("", "Pod", namespace, f"{MANAGED_BY}={AGENT_NAME}")
        except ApiError as err:
            if err.status == 0:
                raise
            continue
        for key in (k for k in waiting if k.partition("/")[0] == namespace):
            want = deployment.selected(children[key][slot], key.partition("/")[2]).items()
            mine = [p for p in pods if want <= ((p.get("metadata") or {}).get("labels") or {}).items()]
            children[key][slot] = deployment.with_pods(children[key][slot], mine, now, seconds(key))


def _moved(report: Report, key: str, health: Obj, on_change: OnChange | None) -> None:
    if report.health.get(key) != health:
        report.health[key] = health
        if on_change is not None:
            on_change(key, health)
