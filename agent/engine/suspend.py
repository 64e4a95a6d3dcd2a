"""Suspend and hot-fix: which objects a pass leaves exactly as they are, and what status says. Pure.

Two switches, each named after the Flux convention its users know:

- ``spec.suspend: true`` on an Application (in Git, or on a hand-applied one) suspends it, as
  Flux's ``spec.suspend`` does for a Kustomization: the agent still applies the Application
  itself from Git (a parent applies a suspended child object; the suspension stops the object's
  own reconciliation, so the cluster records it), but does not apply, correct, recreate or prune
  its children, and never prunes the Application. When Git sets it back to false (or removes
  it) the next pass converges everything: children re-applied, drift undone.
- The annotation ``heumsi.github.io/reconcile: disabled`` on a live object (Flux's
  ``kustomize.toolkit.fluxcd.io/reconcile: disabled``, set with ``kubectl annotate``) makes the
  agent leave that object alone: on an Application, neither it nor its children are applied
  from Git, corrected or pruned (a hand edit of either survives); on one child (Deployment or
  Service), that child alone is not applied, corrected, recreated or pruned while the rest of
  the Application syncs. The agent never writes that annotation, and its field take-over
  (``fields.AUTHORITATIVE``) holds no ``metadata`` path, so its apply never removes it.

The value is compared as Flux compares it (``fluxcd/pkg/ssa/utils.AnyInMetadata``: a non-empty
value equal to ``disabled`` ignoring case, ``strings.EqualFold``).

Written in Git, on an Application, the annotation means what ``spec.suspend: true`` means: the
Application is applied (the annotation reaches the cluster under the agent's field manager),
its children are left alone, it is never pruned, and removing the annotation from Git resumes.
That is told apart from a hand-set annotation by field ownership: a live annotation that only
the agent's manager owns came from Git (``set_by_hand``). Flux would skip applying such an
object altogether, which would leave an annotated Application never created and a removal in
Git never seen; the switch in Git is ``spec.suspend``, the annotation is the cluster's switch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agent.api.labels import AGENT_NAME, RECONCILE_ANNOTATION
from agent.api.objects import Obj
from agent.engine import conditions, status as status_
from agent.kinds import health as health_, registry

RECONCILE_DISABLED = "disabled"
SUSPENDED = conditions.Reason.SUSPENDED
"""The ``Ready``/``Synced`` condition reason of a suspended Application (its health status is
``health.Status.SUSPENDED``, the same string); the name sync.py reads."""

SPEC = "spec.suspend: true"
IN_GIT = f"{RECONCILE_ANNOTATION}: {RECONCILE_DISABLED} in Git"
ON_APPLICATION = f"{RECONCILE_ANNOTATION}: {RECONCILE_DISABLED} on the Application"
"""The three mechanisms that suspend a whole Application, as messages name them."""

_PATH = ("f:metadata", "f:annotations", f"f:{RECONCILE_ANNOTATION}")


@dataclass(frozen=True)
class Hold:
    """Why a whole Application is suspended. ``mechanism``: ``SPEC``, ``IN_GIT`` or
    ``ON_APPLICATION``; ``frozen``: True when the Application object itself is not applied
    from Git either (only ``ON_APPLICATION``)."""

    mechanism: str
    frozen: bool

    @property
    def message(self) -> str:
        """The sentence for the Ready and Synced conditions and the health message."""
        if self.frozen:
            return (f"suspended by {self.mechanism}: neither the Application nor its children are applied "
                    "from Git, corrected or pruned")
        return (f"suspended by {self.mechanism}: its children are not applied, corrected, recreated or "
                "pruned; the Application itself is applied from Git")


def _disabled(obj: Obj | None) -> bool:
    value = (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(RECONCILE_ANNOTATION)
    return isinstance(value, str) and value.casefold() == RECONCILE_DISABLED


def _owners(obj: Obj) -> set[str]:
    """Field managers that own the annotation in ``obj``'s managedFields."""
    owners = set()
    for entry in obj.get("metadata", {}).get("managedFields") or []:
        node = entry.get("fieldsV1") or {}
        for part in _PATH:
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
        else:
            owners.add(entry.get("manager", ""))
    return owners


def set_by_hand(live: Obj | None) -> bool:
    """True when the live object ``live`` (a dict as the API serves it, with managedFields)
    carries ``heumsi.github.io/reconcile: disabled`` and someone other than the agent owns that
    annotation (``kubectl annotate``, ``kubectl edit``, a hand ``kubectl apply``), or no
    managedFields say who does (fail safe: left alone). False when the agent's manager alone
    owns it: it was applied from Git (see the module docstring)."""
    if live is None or not _disabled(live):
        return False
    owners = _owners(live)
    return not owners or bool(owners - {AGENT_NAME})


def application(desired: Obj | None, live: Obj | None) -> Hold | None:
    """Whether, and why, one Application is suspended this pass; None when it is not.

    ``desired``: the Application as rendered from Git (None when it is not in Git: hand-applied,
    or kept after leaving Git); ``live``: as the cluster has it (None before it is created).
    First rule that matches: the annotation set by hand on ``live`` (``ON_APPLICATION``,
    frozen); ``spec.suspend`` true in Git's spec, or in the live spec when Git has none
    (``SPEC``); the annotation in Git, or on ``live`` owned by the agent alone when Git has
    none (``IN_GIT``). Only the boolean true suspends: ``spec.suspend: false`` or absent does not.
    """
    if set_by_hand(live):
        return Hold(ON_APPLICATION, frozen=True)
    source = desired if desired is not None else live
    if ((source or {}).get("spec") or {}).get("suspend") is True:
        return Hold(SPEC, frozen=False)
    if _disabled(source):
        return Hold(IN_GIT, frozen=False)
    return None


def never_pruned(live: Obj) -> bool:
    """True when the live Application ``live`` must not be pruned although it left Git: its
    live ``spec.suspend`` is true or it carries the annotation (``application(None, live)``)."""
    return application(None, live) is not None


def child(hold: Hold | None, subject: str, live: Obj | None) -> str | None:
    """Why the child ``subject`` (``Kind/namespace/name``) is left as it is this pass, or None
    when it is applied as usual: its Application is suspended (``hold``), or the live child
    ``live`` carries the annotation by hand. The reason is the report's message."""
    if hold is not None:
        return not_applied(hold)
    if live is not None and set_by_hand(live):
        return f"not applied, corrected, recreated or pruned: {subject} has {RECONCILE_ANNOTATION}: " \
               f"{(live['metadata']['annotations'][RECONCILE_ANNOTATION])}"
    return None


def not_applied(hold: Hold) -> str:
    """Why a child of the suspended Application (``hold``) is left as it is: the report's message."""
    return f"not applied: its Application is suspended ({hold.mechanism})"


def kept_because(hold: Hold) -> str:
    """The ``kept because ...`` clause for a suspended Application that left Git."""
    return f"it is suspended ({hold.mechanism})"


def held(hold: Hold, *, commit: str | None, path: str | None, gone: bool = False) -> status_.Outcome:
    """The status outcome of the whole suspended Application (``hold``; ``outcome``'s rule for
    it): health Suspended, ``status.suspended``; ``gone``: no longer in Git at ``commit``, kept
    because it is suspended."""
    message = hold.message
    if gone:
        message = f"no longer in Git at commit {commit}; kept because {kept_because(hold)}: {message}"
    return status_.Outcome(False, False, commit, conditions.Reason.SUSPENDED, message, path,
                           health=health_.Health(health_.Status.SUSPENDED, hold.message), suspended=True)


def outcome(hold: Hold | None, skipped: dict[str, str], children: Mapping[str, Obj | None], *,
            commit: str | None, path: str | None, gone: bool = False,
            spec: Obj | None = None, name: str = "") -> status_.Outcome | None:
    """The status outcome of a suspended Application, or None when nothing of it was held.

    ``skipped``: child slot (``Deployment``, ``Service``, ``CronJob/web-nightly``:
    ``registry.slot``) -> subject of each child left alone by its own annotation; ``children``:
    the live children by slot as the pass saw them;
    ``commit``: the commit worked from (None for a hand-applied Application); ``path``: its file
    in Git; ``gone``: it is no longer in Git (kept because it is suspended); ``spec``: the
    live Application's, whose kinds count for its health (``registry.wanted``); ``name``: the
    Application's (its children of a kind with several objects count by name).

    Not ok (so ``lastSyncedCommit`` stays: a suspended Application did not sync the commit; the
    attempted commit advances), reason ``Suspended`` (not in ``conditions.STALLED_REASONS``, so
    never Stalled, and Ready is False). A whole suspended Application has health Suspended and
    ``status.suspended``; a held child makes that child's health Suspended, and the Application
    takes the worst of its children's (``health.worst``).
    """
    if hold is not None:
        return held(hold, commit=commit, path=path, gone=gone)
    if not skipped:
        return None
    names = " and ".join(skipped[kind] for kind in sorted(skipped))
    message = (f"{names} {'has' if len(skipped) == 1 else 'have'} {RECONCILE_ANNOTATION}: {RECONCILE_DISABLED}: "
               "not applied, corrected, recreated or pruned; the rest of the Application synced")
    found = registry.healths(children, spec, name)
    found.update({kind: health_.Health(health_.Status.SUSPENDED, f"not reconciled ({RECONCILE_ANNOTATION}: "
                                                                 f"{RECONCILE_DISABLED})") for kind in skipped})
    return status_.Outcome(False, False, commit, conditions.Reason.SUSPENDED, message, path,
                           health=health_.worst(found))
