"""Prune guards: what a pass may delete when something leaves Git. Pure.

Beyond the empty-set guard in ``sync.py`` (a commit with no Applications prunes nothing without
``--allow-empty``), three rules, each named after the tool whose users know it:

- The annotation ``heumsi.github.io/prune: disabled`` on an Application or on a child keeps
  that object when it leaves Git: reported ``kept``, never deleted (Argo CD's
  ``argocd.argoproj.io/sync-options: Prune=false``, Flux's ``kustomize.toolkit.fluxcd.io/prune:
  disabled``).
- A pass that would prune more than ``--max-prune-share`` of the Applications this source owns,
  and more than ``MIN_PRUNES_GUARDED`` of them, prunes nothing and fails, saying how to proceed
  (a mass deletion is more often a broken commit or a wrong ``--path`` than a wish).
- Deletion uses an explicit propagation policy (``propagation``).
"""

from __future__ import annotations

from agent.api.labels import PRUNE_ANNOTATION
from agent.api.objects import Obj

PRUNE_DISABLED = "disabled"
MIN_PRUNES_GUARDED = 10
"""The share guard only fires when more than this many Applications would be pruned, so a
source with few Applications can still remove one or two of them."""
DEFAULT_MAX_PRUNE_SHARE = 0.5

BACKGROUND, ORPHAN = "Background", "Orphan"


def share(text: str) -> float:
    """Parse ``--max-prune-share``: a number from 0 to 1. Raises ValueError naming what is
    allowed."""
    try:
        value = float(text)
        if 0.0 <= value <= 1.0:
            return value
    except ValueError:
        pass
    raise ValueError(f"{text!r} is not a share from 0 to 1 (1.0 turns the guard off)")


def prune_disabled(obj: Obj) -> bool:
    """True when ``obj`` (any live object dict) carries ``heumsi.github.io/prune: disabled``,
    the value compared ignoring case as Flux compares its own (``fluxcd/pkg/ssa``
    ``AnyInMetadata``, ``strings.EqualFold``), and as ``suspend`` compares the reconcile
    annotation: ``Disabled`` keeps the object too."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(PRUNE_ANNOTATION)
    return isinstance(value, str) and value.casefold() == PRUNE_DISABLED


def too_many(prunes: int, owned: int, max_share: float) -> bool:
    """True when pruning ``prunes`` of the ``owned`` Applications of this source must be
    refused: more than ``max_share`` of them (a fraction, 0 to 1) and more than
    ``MIN_PRUNES_GUARDED``. ``max_share`` 1.0 disables the guard (no pass prunes more than all)."""
    return prunes > MIN_PRUNES_GUARDED and prunes > max_share * owned


def refusal(prunes: int, owned: int, max_share: float, commit: str | None) -> str:
    """The error a refused pass prints: what it would have done and how to proceed."""
    return (f"commit {commit} would prune {prunes} of the {owned} Applications this source owns, more than "
            f"--max-prune-share {max_share:g} of them and more than {MIN_PRUNES_GUARDED}; nothing was pruned "
            "(the rest of the pass was applied). If the commit and --path are right, run again with "
            f"--max-prune-share 1.0 (1.0 turns the guard off), or keep single Applications with the "
            f"annotation {PRUNE_ANNOTATION}: {PRUNE_DISABLED}")


def propagation(kind: str, keeps_children: bool) -> str:
    """The ``propagationPolicy`` for deleting a pruned object of ``kind``.

    Children (Deployment, Service) and Applications are deleted with ``Background``: the API
    server removes the object at once and the garbage collector removes its dependents
    (ReplicaSets and Pods) after, so a pass never waits on them (Flux's default; Argo CD's
    default is Foreground, which makes the pass wait until every Pod is gone). An Application
    one of whose children is kept (``prune_disabled``) is deleted with ``Orphan``, so the
    garbage collector removes that child's ownerReference instead of the child.
    """
    return ORPHAN if kind == "Application" and keeps_children else BACKGROUND
