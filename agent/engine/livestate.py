"""Stage 2 of a pass: read the live state (``read_live``): the CRD served, then one LIST of
Applications, one per child kind (the agent's managed-by label) and one of namespaces (and one
of what a kind's children make, read for the status, when an Application has such a child:
``ChildKind.related``, a CronJob's Jobs).

In ``run`` the lists are served by the watches (``agent/kube/livestore.py``), and what a pass
derives from each live object (its key, its owner) is derived once per object
(``steady.Steady.fact``): at 10,000 Applications that is 30,000 objects a push's pass need not
look at again.
"""

from __future__ import annotations

from typing import Callable, Iterable

from agent.api import labels
from agent.api.objects import Obj
from agent.api.schema import GROUP, KIND, PLURAL, VERSION
from agent.engine import backoff, forward, plan, statuswrite, steady as steady_
from agent.engine.options import Options
from agent.engine.passvalues import AppFacts, ChildFacts, LiveState, Pass, Version, key_of
from agent.engine.plan import Identity
from agent.kinds import registry

CRD_NAME = statuswrite.CRD_NAME
SHARED_RECORDS = 64  # distinct ``recorded`` tuples one ``deriver`` keeps to share (then it starts again)


def read_live(p: Pass) -> LiveState | None:
    """Check the CRD is served with its status subresource, then list Applications, children and
    namespaces. None, with the error in the report, when the CRD is not right. Raises
    ``ApiError`` when a list fails."""
    served = p.kube.served(GROUP, VERSION)
    if PLURAL not in served:
        p.report.errors.append(f"the CustomResourceDefinition {CRD_NAME} is not installed in the cluster "
                               f"(install it with: kubectl apply -f crd.yaml); nothing was changed")
        return None
    if f"{PLURAL}/status" not in served:
        p.report.errors.append(f"the CustomResourceDefinition {CRD_NAME} in the cluster has no status "
                               "subresource, so no Application status could be stored; apply this "
                               "project's crd.yaml (kubectl apply -f crd.yaml); nothing was changed")
        return None
    apps = p.kube.list(GROUP, KIND)
    facts = app_facts(p, apps)
    selector = f"{labels.MANAGED_BY}={labels.AGENT_NAME}"
    children = [child for k in registry.CHILD_KINDS for child in p.kube.list(k.group, k.kind, selector)]
    namespaces = {ns["metadata"]["name"] for ns in p.kube.list("", "Namespace")}
    child_facts = [_facts(p.steady, child) for child in children]
    children_of: dict[str, list[tuple[Obj, Identity, Version]]] = {}
    for child, (ident, owner, version) in zip(children, child_facts):
        if owner is not None:
            children_of.setdefault(owner, []).append((child, ident, version))
    return LiveState(apps, facts, children, child_facts, children_of, namespaces, _related(p, children_of))


def _related(p: Pass, children_of: dict[str, list[tuple[Obj, Identity, Version]]]) -> dict[str, dict[str, Obj]]:
    """Owner key -> slot ``Kind/name`` -> each object a kind's children make that the pass reads
    for the status (``ChildKind.related``: a CronJob's Jobs): one LIST per such kind, only when an
    Application has a child of it (a pass without one sends no more requests than before); each
    object goes to the Application whose child is its controller (ownerReference)."""
    found: dict[str, dict[str, Obj]] = {}
    for k in registry.CHILD_KINDS:
        if k.related is None:
            continue
        owners = {(ident[2], ident[3]): key for key, kids in children_of.items()
                  for _, ident, _ in kids if ident[1] == k.kind}
        if not owners:
            continue
        group, kind, selector = k.related
        for obj in p.kube.list(group, kind, selector):
            meta, ref = obj["metadata"], plan.controller(obj) or {}
            key = owners.get((meta.get("namespace", ""), ref.get("name", ""))) if ref.get("kind") == k.kind else None
            if key is not None:
                found.setdefault(key, {})[f"{kind}/{meta['name']}"] = obj
    return found


def child_facts(child: Obj) -> ChildFacts:
    """(identity, its Application's key when the agent owns it, else None, (identity,
    resourceVersion): what ``steady.Steady.unchanged`` compares) of a live child."""
    ident = plan.identity(child)
    return ident, plan.owner_key(child) if plan.owned(child) else None, (ident, child["metadata"].get("resourceVersion"))


def _facts(steady: steady_.Steady | None, child: Obj) -> ChildFacts:
    """``child_facts``, derived once per object in ``run`` (``steady.Steady.fact``)."""
    return child_facts(child) if steady is None else steady.fact(child, child_facts)


def app_facts(p: Pass, apps: list[Obj]) -> list[AppFacts]:
    """The ``AppFacts`` of each live Application, derived once per object in ``run``."""
    derive, steady = deriver(p.opts), p.steady
    return [derive(app) for app in apps] if steady is None else [steady.fact(app, derive) for app in apps]


def deriver(opts: Options) -> Callable[[Obj], AppFacts]:
    """The function that derives a live Application's ``AppFacts`` under ``opts`` (pure). One a
    former id of this source holds (``Options.former_source_ids``) is this source's. Equal
    ``recorded`` tuples are one (10,000 Applications record one commit)."""
    source, former = opts.source_id, opts.former_source_ids
    shared: dict[tuple[str, ...], tuple[str, ...]] = {}

    def derive(obj: Obj) -> AppFacts:
        ours, mine = plan.owned_both(obj, source)
        this = mine or (ours and bool(former) and (obj["metadata"].get("labels") or {}).get(labels.SOURCE_LABEL) in former)
        recorded = forward.recorded(obj)
        if len(shared) > SHARED_RECORDS:
            shared.clear()
        return AppFacts(key_of(obj), ours, this, mine, shared.setdefault(recorded, recorded), backoff.failures(obj) > 0)
    return derive


def warm(steady: steady_.Steady, opts: Options, apps: Iterable[Obj], stop: Callable[[], bool]) -> int:
    """Derive the ``AppFacts`` of ``apps`` (the store's Applications) between two passes of
    ``run`` (``Steady.warm``; ``stop()``: a pass is wanted, it derives the rest). Why: a status
    sweep replaces every Application, and the next push's pass would derive 10,000 facts on its
    way to its apply (issue 48). Returns how many were looked at."""
    return steady.warm(apps, deriver(opts), stop)


def unchanged(p: Pass, live: LiveState, live_apps: dict[str, Obj]) -> dict[str, steady_.Entry]:
    """The Applications from Git whose document, live object and live children are as the
    previous pass of ``run`` left them (``steady.Steady.unchanged``): key -> entry."""
    if p.steady is None or not p.steady.entries:
        return {}
    hits: dict[str, steady_.Entry] = {}
    blobs, children_of, same = p.git.blobs, live.children_of, p.steady.unchanged
    this_source = {f.key for f in live.app_facts if f.this}
    for key, m in zip(p.git.keys, p.git.manifests):
        app = live_apps.get(key)
        blob = blobs.get(m.path)
        # no blob id: its content cannot be told apart; not this source's any more: another source
        # took it between two of this pass's writes (its apply and its status), which the
        # resourceVersion after those writes does not show
        if app is None or blob is None or key not in this_source:
            continue
        children = tuple(sorted(version for _, _, version in children_of.get(key, ())))
        entry = same(key, (m.path, m.line, blob), app, children)
        if entry is not None:
            hits[key] = entry
    return hits
