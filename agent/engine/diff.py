"""Unified diffs of live objects against what a pass would make of them.

``diff`` and ``sync --dry-run`` run the ordinary pass (``sync.run``) against a ``Kube`` in dry-run
mode wrapped in a ``Recording``: it remembers every live object the pass listed and every object
the server answered a dry-run apply with, and every object the pass would delete. The diff of an
object is then live against the server's own dry-run result, so defaults the server fills in
appear on both sides and never as changes. New objects are additions, pruned ones deletions.

Noise is stripped from both sides first: ``status``, the server-managed metadata
(``managedFields``, ``resourceVersion``, ``generation``, ``uid``, ``creationTimestamp``) and the
agent's ``heumsi.github.io/source-commit`` annotation, which moves with every commit.
"""

from __future__ import annotations

import builtins
import copy
import difflib
from typing import Any

from agent.api.labels import SOURCE_COMMIT
from agent.api.objects import Obj
from agent.engine import plan
from agent.kube.cluster import Cluster, Wrapper
from agent.manifests import yamlwrite

NOISY_METADATA = ("managedFields", "resourceVersion", "generation", "uid", "creationTimestamp")
NOISY_ANNOTATIONS = (SOURCE_COMMIT,)


def strip(obj: Obj) -> Obj:
    """A deep copy of ``obj`` without status, server-managed metadata and the source-commit
    annotation (an annotations mapping left empty is removed too)."""
    out = copy.deepcopy(obj)
    out.pop("status", None)
    meta = out.get("metadata") or {}
    for key in NOISY_METADATA:
        meta.pop(key, None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        for key in NOISY_ANNOTATIONS:
            annotations.pop(key, None)
        if not annotations:
            meta.pop("annotations")
    return out


def dump(obj: Obj | None) -> list[str]:
    """``strip(obj)`` as YAML lines with sorted keys and no anchors or aliases (``[]`` for
    None), newline-terminated (``yamlwrite.plain_lines``: ``kubectl diff`` never prints aliases
    either)."""
    if obj is None:
        return []
    return yamlwrite.plain_lines(strip(obj))


def unified(subject: str, live: Obj | None, desired: Obj | None) -> str:
    """Unified diff (3 lines of context) from ``live`` to ``desired`` (either may be None: an
    addition or a deletion), headed ``--- live/<subject>`` and ``+++ desired/<subject>``
    (``/dev/null`` for the missing side, as Git does);
    ``""`` when they are equal after ``strip``."""
    lines = difflib.unified_diff(dump(live), dump(desired),
                                 fromfile="/dev/null" if live is None else f"live/{subject}",
                                 tofile="/dev/null" if desired is None else f"desired/{subject}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


class Recording(Wrapper):
    """A ``Kube`` (normally with ``dry_run=True``) that remembers what a pass saw and would do.

    ``live``: subject -> object as listed; ``applied``: subject -> the server's answer to the
    (dry-run) apply; ``deleted``: subject -> the object a (dry-run) delete named. Subjects are
    ``Kind/namespace/name``. Every other verb is the wrapped one's (``Wrapper``).
    """

    def __init__(self, kube: Cluster) -> None:
        self._kube = kube
        self.live: dict[str, Obj] = {}
        self.applied: dict[str, Obj] = {}
        self.deleted: dict[str, Obj] = {}

    def list(self, group: str, kind: str, label_selector: str | None = None) -> list[Obj]:
        return self._seen(self._kube.list(group, kind, label_selector))

    def list_in(self, group: str, kind: str, namespace: str, label_selector: str | None = None) -> builtins.list[Obj]:
        """The namespaced list a pass reads before it creates a child (``apply.claim``): an
        object found there is the live side of its diff (one to adopt, or the agent's own that
        lost its label), not an addition."""
        return self._seen(self._kube.list_in(group, kind, namespace, label_selector))

    def _seen(self, items: builtins.list[Obj]) -> builtins.list[Obj]:
        for item in items:
            self.live.setdefault(plan.subject(plan.identity(item)), item)
        return items

    def apply(self, obj: Obj, *args: Any, **kwargs: Any) -> Obj:
        result = self._kube.apply(obj, *args, **kwargs)
        self.applied[plan.subject(plan.identity(obj))] = result
        return result

    def delete(self, obj: Obj, *args: Any, **kwargs: Any) -> bool:
        result = self._kube.delete(obj, *args, **kwargs)
        self.deleted[plan.subject(plan.identity(obj))] = obj
        return result

    def diffs(self) -> dict[str, str]:
        """subject -> unified diff, for every object whose content would change: applied
        objects against their live version (an addition when there was none), deleted and
        not re-applied objects as deletions. Objects that would not change are left out."""
        out: dict[str, str] = {}
        for subject, result in self.applied.items():
            text = unified(subject, self.live.get(subject), result)
            if text:
                out[subject] = text
        for subject, obj in self.deleted.items():
            if subject not in self.applied:
                out[subject] = unified(subject, self.live.get(subject, obj), None)
        return dict(sorted(out.items()))
