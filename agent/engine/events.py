"""At most one Event per Application per pass, naming what happened to it.

Why: the agent used to record one Event per changed object (three per new Application: 3,000 of
the 7,010 requests of a cold pass at 1,000 Applications, issue 11). Flux's kustomize-controller
records one Event per reconciliation with the change set as its message; so does this module.
During a pass, ``Batch`` collects per Application the objects created, configured, recreated
or pruned, and the Warning the status step decided on (only when the conditions changed, as
before); ``flush`` then sends one Event per Application that has something to say:

* a Warning (its reason and message, the change set appended) when there is one;
* else a Normal Event whose reason is the weightiest action (Adopted, Recreated, Created,
  Updated, Pruned) and whose message lists the objects per action, for example
  ``created Deployment/ns/web, Service/ns/web; configured Application/ns/web``.

Besides, what the API server warned of an apply (its ``Warning`` headers: PodSecurity's ``warn``
mode, a deprecated API) is an ``AdmissionWarning`` Warning Event of its own (``warned``), each
text of an object once: once per pass in ``sync --once``; in ``run`` (``told``:
``steady.Steady.told``) once until a write of that object comes back without it, not at every
pass that applies the object again.

An Application with nothing changed and no new Warning gets no Event. The message is the pure
``message`` function below (table-tested).
"""

from __future__ import annotations

import threading
from typing import Callable

from agent.api.objects import Obj
from agent.engine.report import ADOPTED, CONFIGURED, CREATED, PRUNED, RECREATED
from agent.kube.cluster import Cluster, Wrapper

ORDER = (ADOPTED, CREATED, CONFIGURED, RECREATED, PRUNED)  # the order of the parts of a message
REASONS = {ADOPTED: "Adopted", RECREATED: "Recreated", CREATED: "Created", CONFIGURED: "Updated", PRUNED: "Pruned"}
WEIGHT = (ADOPTED, RECREATED, CREATED, CONFIGURED, PRUNED)  # the first one present names the Normal reason
MAX_MESSAGE = 1024  # characters: the Event API's own limit for a message
ADMISSION_WARNING = "AdmissionWarning"
MAX_TOLD = 10_000  # Applications whose told warnings are remembered; then all are forgotten at once


def message(changes: list[tuple[str, str, str]]) -> str:
    """``changes``: (action, subject ``Kind/ns/name``, why) in the order they happened; actions
    other than adopted, created, configured, recreated and pruned are ignored. Returns
    ``"adopted A (why); created B, C; configured D; recreated E (why)"``: one part per action in ``ORDER``,
    subjects in order of appearance, each once; ``""`` when nothing changed."""
    parts = []
    for action in ORDER:
        seen: list[str] = []
        for act, subject, why in changes:
            text = f"{subject} ({why})" if why else subject
            if act == action and text not in seen:
                seen.append(text)
        if seen:
            parts.append(f"{action} {', '.join(seen)}")
    return "; ".join(parts)


def reason(changes: list[tuple[str, str, str]]) -> str | None:
    """The Normal Event reason for ``changes``: ``REASONS`` of the weightiest action present
    (``WEIGHT``), or None when nothing changed."""
    present = {act for act, _, _ in changes}
    return next((REASONS[a] for a in WEIGHT if a in present), None)


class Batch(Wrapper):
    """A ``Kube`` whose ``event`` calls are held until ``flush``; ``change`` notes an object's
    action for its Application. Every other verb is the wrapped one's (``Wrapper``). Thread-safe.
    Applications are keyed ``namespace/name``; the Event goes to the last object given for the
    key (the live Application, or the pruned one)."""

    def __init__(self, kube: Cluster, told: dict[str, set[str]] | None = None) -> None:
        self._kube = kube
        self._told = told if told is not None else {}
        self._admission: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._objects: dict[str, Obj] = {}
        self._changes: dict[str, list[tuple[str, str, str]]] = {}
        self._warnings: dict[str, tuple[str, str]] = {}
        self._notes: dict[str, list[tuple[str, str]]] = {}

    @staticmethod
    def _key(obj: Obj) -> str:
        return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"

    def change(self, app: Obj | None, key: str, action: str, subject: str, why: str = "") -> None:
        """Note that ``subject`` was ``action`` (created, configured, recreated, pruned) for the
        Application ``key``; ``app`` is its object when known (None: only noted)."""
        with self._lock:
            if app is not None:
                self._objects[key] = app
            self._changes.setdefault(key, []).append((action, subject, why))

    def warned(self, app: Obj | None, key: str, subject: str, texts: tuple[str, ...]) -> None:
        """Note what the API server warned (``texts``; none: a write it said nothing of) of a
        write of ``subject`` for the Application ``key`` (``app``: its object; None: only noted):
        each ``SUBJECT: TEXT`` not yet told (``told``: key -> lines) goes into the Application's
        ``AdmissionWarning`` Event; the told lines of ``subject`` that this write did not repeat
        are forgotten (told again if they come back)."""
        lines = [f"{subject}: {text}" for text in texts]
        with self._lock:
            if app is not None and lines:
                self._objects[key] = app
            before = self._told.get(key)
            if before is None and not lines:
                return
            if before is None and len(self._told) >= MAX_TOLD:
                self._told.clear()
            told = {line for line in before or () if not line.startswith(f"{subject}: ")}
            for line in lines:
                if line not in (before or ()):
                    self._admission.setdefault(key, []).append(line)
            told.update(lines)
            if told:
                self._told[key] = told
            else:
                self._told.pop(key, None)

    def event(self, obj: Obj, type_: str, reason_: str, text: str) -> None:
        """Hold an Event for ``obj``: a Warning replaces any earlier Warning for it; a Normal
        one's text is appended to the Application's message (its reason is used only when no
        change names a weightier one)."""
        key = self._key(obj)
        with self._lock:
            self._objects[key] = obj
            if type_ == "Warning":
                self._warnings[key] = (reason_, text)
            else:
                self._notes.setdefault(key, []).append((reason_, text))

    def pending(self) -> list[tuple[Obj, str, str, str]]:
        """(object, type, reason, message) of every Event ``flush`` would send, sorted by
        Application key (an Application's ``AdmissionWarning`` first)."""
        out = []
        with self._lock:
            for key in sorted(set(self._changes) | set(self._warnings) | set(self._notes) | set(self._admission)):
                obj = self._objects.get(key)
                if obj is None:
                    continue
                if key in self._admission:
                    out.append((obj, "Warning", ADMISSION_WARNING, "; ".join(self._admission[key])))
                changes = self._changes.get(key, [])
                notes = self._notes.get(key, [])
                summary = "; ".join([p for p in [message(changes)] if p] + [t for _, t in notes])
                if key in self._warnings:
                    why, text = self._warnings[key]
                    out.append((obj, "Warning", why, f"{text}; {summary}" if summary else text))
                elif summary:
                    out.append((obj, "Normal", reason(changes) or notes[0][0], summary))
        return [(o, t, r, m[:MAX_MESSAGE]) for o, t, r, m in out]

    def flush(self, send: Callable[[list[tuple[Obj, str, str, str]]], object] | None = None) -> None:
        """Send the held Events (through ``send(task_list)`` when given, e.g. a pool; else one
        after another) and forget them. Event failures are logged by ``Kube.event``."""
        items = self.pending()
        with self._lock:
            self._changes.clear()
            self._warnings.clear()
            self._notes.clear()
            self._admission.clear()
            self._objects.clear()
        if send is not None:
            send(items)
            return
        for obj, type_, why, text in items:
            self._kube.event(obj, type_, why, text)
