"""Pair desired objects with live ones and decide, per object, what a pass does. Pure.

Objects are plain dicts as the API serves them. Identity is (group, kind, namespace, name),
never the file a manifest came from, so moving a file changes nothing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Iterable, Mapping, cast

from agent.api.labels import ADOPT_ANNOTATION, AGENT_NAME, MANAGED_BY, SOURCE_COMMIT, SOURCE_LABEL, SOURCE_PATH
from agent.api.objects import Obj, ObjectMeta
from agent.api.schema import GROUP, KIND
from agent.kinds import fields, registry


class Op(StrEnum):
    """What a pass does to one object (``Step.action``). A ``str``."""

    CREATE = "create"
    UPDATE = "update"
    UNCHANGED = "unchanged"
    PRUNE = "prune"
    CONFLICT = "conflict"
    """A child's slot holds someone else's object (``ownership``): ``claim`` takes such steps out."""


class Owner(StrEnum):
    """Whose an object in a child's slot is (``Verdict.kind``, see ``ownership``). A ``str``."""

    OURS = "ours"
    ADOPT = "adopt"
    STRANGER = "stranger"


UNCHANGED, PRUNE = Op.UNCHANGED, Op.PRUNE  # the names sync.py reads

Identity = tuple[str, str, str, str]
"""(group, kind, namespace, name); the core group is ""."""

PROVENANCE = frozenset({SOURCE_COMMIT, SOURCE_PATH})
"""Annotations that record where content came from; a change in them alone is not a change."""


def identity(obj: Obj) -> Identity:
    """(group, kind, namespace, name) of an object dict; group from ``apiVersion`` ("" for v1)."""
    group = sys.intern(obj["apiVersion"].rpartition("/")[0])  # one "apps" for 20,000 identities
    meta: ObjectMeta = obj["metadata"]
    return (group, obj["kind"], meta.get("namespace", ""), meta["name"])


def subject(ident: Identity) -> str:
    """``Kind/namespace/name``, the way summaries, events and errors name an object."""
    _, kind, namespace, name = ident
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def owned(obj: Obj, source: str | None = None) -> bool:
    """True when the agent owns ``obj`` and may prune it (which objects it applies over, takes
    fields over on or recreates where Git wants them is ``not_ours``'s rule, which does not ask
    for the label or the ownerReference a hand edit removes).

    Every owned object was applied by the agent's field manager (see
    ``fields.applied_by_agent``) and carries ``app.kubernetes.io/managed-by: gitops-agent``.
    An Application must also carry ``heumsi.github.io/source`` equal to ``source`` when one is
    given (another repository's or path's Applications are not ours). A child must be exactly
    a child the agent renders: a controller ownerReference to an Application with the child's
    own name (children are named like their Application; ``named_for``). Copied labels, a copied
    ownerReference or a copy-pasted manifest under another name never make an object ours.
    """
    return owned_both(obj, source)[source is not None]


def owned_both(obj: Obj, source: str | None) -> tuple[bool, bool]:
    """(``owned(obj)``, ``owned(obj, source)``), for the price of one: a pass asks both of
    10,000 Applications."""
    meta: ObjectMeta = obj.get("metadata", {})
    labels = meta.get("labels") or {}
    if labels.get(MANAGED_BY) != AGENT_NAME or not fields.applied_by_agent(obj):
        return False, False
    if identity(obj)[:2] == (GROUP, KIND):
        return True, source is None or labels.get(SOURCE_LABEL) == source
    mine = named_for(obj)
    return mine, mine


def named_for(obj: Obj) -> bool:
    """True when the child ``obj`` is named for the Application its controller ownerReference
    names (``owner_name``): named like it, or, for a kind with several objects per Application
    (``ChildKind.many``: a CronJob per schedule), ``<application>-<member>``."""
    owner, name = owner_name(obj), obj.get("metadata", {}).get("name") or ""
    kind = registry.BY_KIND.get(obj.get("kind", ""))
    if owner is not None and kind is not None and kind.many:
        return name.startswith(f"{owner}-") and len(name) > len(owner) + 1
    return owner == name


def owner_name(obj: Obj) -> str | None:
    """Name of the Application named by ``obj``'s controller ownerReference, or None."""
    return next((ref.get("name") for ref in obj.get("metadata", {}).get("ownerReferences") or []
                 if ref.get("kind") == KIND and ref.get("apiVersion", "").startswith(GROUP + "/")
                 and ref.get("controller")), None)


def controller(obj: Obj) -> Obj | None:
    """``obj``'s controller ownerReference, whatever its owner's kind, or None (the API server
    allows one per object)."""
    return next((ref for ref in obj.get("metadata", {}).get("ownerReferences") or [] if ref.get("controller")),
                None)


def managers(obj: Obj) -> list[str]:
    """The field managers that wrote ``obj`` itself (``metadata.managedFields``; a controller
    writing only its ``status`` is not one), sorted, each once."""
    return sorted({e.get("manager") or "?" for e in obj.get("metadata", {}).get("managedFields") or []
                   if e.get("subresource") != "status"})


def opted_in(app: Obj) -> bool:
    """True when the Application ``app`` carries ``heumsi.github.io/adopt: "true"``: objects
    in its children's slots that no controller holds are adopted (``ownership``)."""
    value = (app.get("metadata", {}).get("annotations") or {}).get(ADOPT_ANNOTATION, "")
    return isinstance(value, str) and value.strip().lower() == "true"


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whose an object in a child's slot is: ``kind`` is ``OURS`` (the agent's own child),
    ``ADOPT`` (the Application's child that someone else wrote: the agent takes it over) or
    ``STRANGER`` (never modified or deleted); ``why`` says why it is adopted or left alone."""

    kind: Owner
    why: str = ""


def ownership(live: Obj, desired: Obj, opt_in: bool = False, denied: str = "") -> Verdict:
    """Whose ``live`` is, standing in the slot of the desired child ``desired`` (same kind,
    namespace and name; its controller ownerReference names the Application and its uid).

    The rule (docs/concepts.md, "Adoption"; as a Kubernetes controller adopts objects that
    match it and never one another controller holds):

    - a controller ownerReference to the Application the desired child's own reference names
      (children are named like their Application, or ``<application>-<member>`` for a kind
      with several: ``named_for``) makes it that Application's child, whoever wrote it: ``OURS``
      when the agent's field manager applied it and the reference has the Application's uid,
      else ``ADOPT`` (made by another operator, ``kubectl create`` or an earlier install; or a
      reference to an earlier Application of that name, deleted and made again: only one
      controller reference is allowed, so no other controller holds it; the apply replaces the
      stale reference, ``fields.adoption_domains``, and ``why`` says so);
    - no controller: ``OURS`` when the agent applied it (its child that lost its
      ownerReference by hand), ``ADOPT`` when the Application opted in (``opt_in``,
      ``opted_in``) and the operator consents there, else ``STRANGER``; ``denied``: why the
      operator does not consent although the Application opted in (``tenancy.adoption_denied``),
      added to the stranger's ``why``;
    - any other controller: ``STRANGER``.
    """
    meta, name = live["metadata"], owner_name(desired) or desired["metadata"]["name"]
    uid = next((r.get("uid") for r in desired["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
    ref, agent = controller(live), fields.applied_by_agent(live)
    if ref is None:
        if agent:
            return Verdict(Owner.OURS)
        if opt_in:
            return Verdict(Owner.ADOPT, f'no controller holds it and the Application has {ADOPT_ANNOTATION}: "true"')
        return Verdict(Owner.STRANGER, "is controlled by nothing and was not made by the agent"
                       + (f"; {denied}" if denied else ""))
    if owner_name(live) != name:
        return Verdict(Owner.STRANGER, f"is controlled by {ref.get('kind')}/{ref.get('name')} (its controller "
                                 f"ownerReference), not by Application {meta.get('namespace')}/{name}")
    if uid is not None and ref.get("uid") != uid:
        return Verdict(Owner.ADOPT, f"its controller ownerReference names an earlier Application {name} (uid "
                              f"{ref.get('uid')}), deleted and made again, and no other controller holds it: the "
                              f"stale reference is replaced by one to this Application (uid {uid})")
    if agent:
        return Verdict(Owner.OURS)
    return Verdict(Owner.ADOPT, "its controller ownerReference names this Application")


def not_ours(live: Obj) -> str | None:
    """Why the agent must leave ``live`` alone although it stands where a desired object goes
    (the same identity), as a phrase after "exists and"; None when it is the agent's own.

    The rule: the agent's own is what its field manager applied (an Apply entry of
    ``gitops-agent`` in managedFields, ``fields.applied_by_agent``: no copy, ``kubectl
    create`` or another manager's apply makes one) and what no other owner controls (no
    controller ownerReference, or one to the Application of its name). Labels and
    ownerReferences are ordinary metadata that a hand edit removes: a child of an Application
    in Git that lost them is still the agent's, and its next apply puts them back
    (re-adoption, as a Kubernetes controller adopts an orphan that matches it but never an
    object another controller controls; the API server also refuses a second controller).
    Pruning stays stricter (``owned``): it needs the label and the ownerReference too.
    """
    if not fields.applied_by_agent(live):
        return (f"was not made by the agent: its metadata.managedFields has no Apply entry of the field "
                f"manager {AGENT_NAME}")
    meta: ObjectMeta = live["metadata"]
    ref = controller(live)
    if ref is not None and not named_for(live):
        return (f"is controlled by {ref.get('kind')}/{ref.get('name')} (its controller ownerReference), "
                f"not by Application {meta['namespace']}/{meta['name']}")
    return None


def owner_key(obj: Obj) -> str:
    """``namespace/name`` of the Application an object belongs to: itself for an Application,
    its controller ownerReference's Application for a child (the child's name when it has
    none, as a desired child's reference always names it)."""
    meta: ObjectMeta = obj["metadata"]
    if obj["kind"] == KIND:
        return sys.intern(f"{meta['namespace']}/{meta['name']}")
    # one string per Application however many children and report entries name it
    return sys.intern(f"{meta['namespace']}/{owner_name(obj) or meta['name']}")


def drifted_ownership(live: Obj, desired: Obj | None = None) -> bool:
    """True when ``live``, standing where a desired object goes, is the agent's own
    (``not_ours`` finds no reason against it) and other managers (kubectl and Update writers)
    own fields inside what the agent renders in full (``fields.AUTHORITATIVE``): drift that
    the agent's apply removes once those fields are handed over, even when every value the
    agent sets is still in place (an added port, an extra selector key). A child that lost its
    managed-by label or its ownerReference is handed over like any other of the agent's own.
    ``desired``: what Git wants there; a released field it does not set (a Deployment's
    replicas under an autoscaler) is nobody's drift (``fields.domains``). An Application from
    Git is applied over whoever made it (another source's is refused before: ``refuse``), so
    its spec is handed over even on its first apply (one applied with kubectl, as the original
    operator's users did)."""
    return (identity(live)[:2] == (GROUP, KIND) or not_ours(live) is None) and bool(fields.foreign(live, desired))


def contains(live: Any, desired: Any) -> bool:
    """True when every field set in ``desired`` has the same value in ``live``.

    Mappings compare key by key (extra live keys, such as defaults the API server filled in,
    are ignored); lists must have the same length and match element by element.
    """
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(k in live and contains(live[k], v) for k, v in desired.items())
    if isinstance(desired, list):
        return (isinstance(live, list) and len(live) == len(desired)
                and all(contains(lv, dv) for lv, dv in zip(live, desired)))
    return bool(live == desired)


def _without_provenance(obj: Obj) -> Obj:
    annotations = obj.get("metadata", {}).get("annotations")
    if not annotations:
        return obj
    meta = dict(obj["metadata"])
    meta["annotations"] = {k: v for k, v in annotations.items() if k not in PROVENANCE}
    return {**obj, "metadata": meta}


@dataclass(frozen=True, slots=True)  # a pass makes one per object: no __dict__
class Step:
    """One decision: ``action`` is create, update, unchanged or prune; ``desired`` is None for
    prune (and for an unchanged child once ``sync`` has let its desired object go: the live one
    then stands for both), ``live`` is None for create."""

    action: Op
    identity: Identity
    desired: Obj | None
    live: Obj | None
    why: str = ""
    """An update that adopts ``live``: why it is the Application's; a conflict: why it is not."""

    @property
    def subject(self) -> str:
        return subject(self.identity)

    @property
    def target(self) -> Obj:
        """The object the step is about: ``desired``, else ``live`` (a step has one or both)."""
        return cast(Obj, self.desired if self.desired is not None else self.live)

    @property
    def adopting(self) -> bool:
        """True for an update that takes over the Application's child someone else wrote."""
        return self.action == Op.UPDATE and bool(self.why)


def plan(desired: Iterable[Obj], live: Iterable[Obj], *, prune: bool = True,
         source: str | None = None) -> list[Step]:
    """Decide create/update/unchanged for each desired object and prune for each live object
    the agent owns (see ``owned``) that is no longer desired.

    A desired object is unchanged when every field it sets has the same value live, no other
    manager owns fields where the agent renders in full (``drifted_ownership``), the agent owns
    no field Git no longer sets (``fields.dropped``: a removed env variable) and holds no field
    it lets go of (``fields.releasable``: replicas left to an autoscaler); each is a difference
    the agent's apply removes, so a pass after a successful one is quiet.

    ``prune=False`` (a pass that could not see the whole truth) yields no prune steps;
    ``source`` limits pruned Applications to those of one source (see ``owned``).
    Steps come in a stable order: desired objects in their order, then prunes sorted by identity.
    """
    live_by_id = {identity(obj): obj for obj in live}
    steps = [decide(obj, live_by_id.get(identity(obj))) for obj in desired]
    if prune:
        steps += prunes(live_by_id, {step.identity for step in steps}, source)
    return steps


def decide(obj: Obj, current: Obj | None, opt_in: bool = False, denied: str = "") -> Step:
    """The step for one desired object ``obj``, given ``current``, the live object with its
    identity (None when there is none): create, unchanged or update, as ``plan`` decides. For a
    child, ``current`` is first judged (``ownership``; ``opt_in``: its Application's
    ``opted_in`` with the operator's consent; ``denied``: why the operator refused it): an update
    that adopts it, or a conflict when it is someone else's."""
    ident = identity(obj)
    if current is None:
        return Step(Op.CREATE, ident, obj, None)
    if ident[:2] != (GROUP, KIND):
        verdict = ownership(current, obj, opt_in, denied)
        if verdict.kind != Owner.OURS:
            return Step(Op.UPDATE if verdict.kind == Owner.ADOPT else Op.CONFLICT, ident, obj, current, verdict.why)
    wanted = _without_provenance(obj)
    if (contains(current, wanted) or _only_theirs_differ(current, wanted)) \
            and not drifted_ownership(current, obj) and not _stale(current, obj):
        return Step(Op.UNCHANGED, ident, obj, current)
    return Step(Op.UPDATE, ident, obj, current)


def _stale(live: Obj, desired: Obj) -> bool:
    """True when the agent's own apply of ``live`` holds a field Git no longer sets, to remove
    (``fields.dropped``) or to let go of (``fields.releasable``); only for the agent's own."""
    return (fields.dropped(live, desired) or fields.releasable(live, desired)) and not_ours(live) is None


def _only_theirs_differ(live: Obj, desired: Obj) -> bool:
    """True when ``live`` contains ``desired`` once the list entries another controller
    declared with its own server-side apply are set aside (``fields.without_theirs``): the
    agent's apply leaves those in place, so applying would change nothing, pass after pass."""
    trie = fields.theirs(live, desired)
    return bool(trie) and contains(fields.without_theirs(live, trie, desired), desired)


def prunes(live_by_id: dict[Identity, Obj], desired: set[Identity], source: str | None = None) -> list[Step]:
    """Prune steps, sorted by identity, for each object of ``live_by_id`` (identity -> live
    object) whose identity is not in ``desired`` and that the agent owns (``owned``; with
    ``source``, only that source's Applications)."""
    return [Step(Op.PRUNE, ident, None, live_by_id[ident]) for ident in sorted(set(live_by_id) - desired)
            if owned(live_by_id[ident], source)]


def claim(steps: list[Step], found: Iterable[Obj], opted: frozenset[str] | set[str] = frozenset(),
          denied: Mapping[str, str] | None = None) -> tuple[list[Step], list[tuple[Step, str]]]:
    """Check the child steps against ``found``: objects that exist under a create's identity
    although the label-selected list did not show them (a namespaced list without a selector).
    ``opted``: ``namespace/name`` of the Applications that opted in to adopt (``opted_in``) where
    the operator consents; ``denied``: ``namespace/name`` -> why the operator does not, for those
    that opted in elsewhere.
    Returns ``(steps, conflicts)``:

    - a create whose object exists is decided again against it (``decide``): the agent's own
      child that lost its managed-by label (an update that relabels it), the Application's
      child someone else made (an update that adopts it, ``ownership``), or someone else's;
    - a conflict step (someone else's object in the slot, ``ownership``) is taken out of
      ``steps`` and returned in ``conflicts`` with why it is not the Application's: the agent
      never applies over it (a server-side apply would silently adopt it, and a later prune
      would delete it), so the caller fails that Application, naming the object;
    - every other step is returned unchanged, in its order.
    """
    by_id = {identity(obj): obj for obj in found}
    out, conflicts = [], []
    for step in steps:
        existing = by_id.get(step.identity) if step.action == Op.CREATE else None
        if existing is not None:
            desired = cast(Obj, step.desired)  # a create's
            key = owner_key(desired)
            step = decide(desired, existing, key in opted, (denied or {}).get(key, ""))
        if step.action == Op.CONFLICT:
            conflicts.append((step, step.why))
        else:
            out.append(step)
    return out, conflicts
