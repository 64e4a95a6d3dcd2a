"""What one pass did: the change set, the errors, and the human summary printed at the end."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agent.api.objects import Obj

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


class Action(StrEnum):
    """What a pass did to one object (``Change.action``), as the summary, the reports (text, json,
    markdown) and the metrics name it. A ``str``: it compares, hashes and serializes as its value."""

    CREATED = "created"
    CONFIGURED = "configured"
    UNCHANGED = "unchanged"
    PRUNED = "pruned"
    FAILED = "failed"
    KEPT = "kept"  # no longer in Git, not pruned (pruning off or blocked)
    RECREATED = "recreated"  # deleted and created again: an immutable field differed from Git
    ADOPTED = "adopted"  # the Application's child someone else wrote, taken over (plan.ownership)
    SUSPENDED = "suspended"  # left exactly as it is: spec.suspend or heumsi.github.io/reconcile: disabled
    HELD = "held"  # not applied yet: a task must succeed first (taskgate), or a correction backs off (selfheal)
    SKIPPED = "skipped"  # an Application in backoff a ``run`` pass did not attempt (``backoff.waiting``)


# the module-level names sync.py and the reports import
CREATED, CONFIGURED, UNCHANGED, PRUNED, FAILED = (Action.CREATED, Action.CONFIGURED, Action.UNCHANGED, Action.PRUNED,
                                                  Action.FAILED)
KEPT, RECREATED, ADOPTED, SUSPENDED, SKIPPED = (Action.KEPT, Action.RECREATED, Action.ADOPTED, Action.SUSPENDED,
                                                Action.SKIPPED)
HELD = Action.HELD
WRITTEN = frozenset({Action.CREATED, Action.CONFIGURED, Action.RECREATED, Action.ADOPTED})
"""The actions that change a live object by applying it."""


@dataclass(frozen=True, slots=True)  # a pass makes one per object: no __dict__
class Change:
    """One object's outcome. ``application``: ``namespace/name`` of the owning Application;
    ``subject``: ``Kind/namespace/name``; ``action``: created, configured, unchanged,
    recreated, adopted, pruned, kept, suspended or failed; ``message``: why, for failures,
    recreations, adoptions, kept and suspended objects; ``warnings``: what the API server's
    ``Warning`` headers said of its writes (admission, a deprecated API; ``warnheader``)."""

    application: str
    subject: str
    action: Action
    message: str = ""
    warnings: tuple[str, ...] = ()


@dataclass
class Report:
    """The result of a pass. ``commit`` is the full SHA worked from (None if the fetch
    failed); ``errors`` are human sentences naming file, line, field or object;
    ``failed`` the ``namespace/name`` of Applications that did not fully sync."""

    commit: str | None = None
    changes: list[Change] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    fetch_seconds: float | None = None  # None when no fetch ran this pass
    fetch_failed: bool = False
    stopped: bool = False
    """The pass stopped part way (the API server unreachable: ``sync.run``): what it holds is what it
    did until then, e.g. the health of only some Applications (the ``applications`` gauge skips it)."""
    problems: list[Any] = field(default_factory=list)  # manifests.ManifestError behind file errors
    invalid: list[tuple[str, str]] = field(default_factory=list)
    """Refused documents or files: (what, reason), ``what`` being ``namespace/name`` of the
    Application when the document named one (then also in ``refused``), else ``path:line`` or
    ``path`` (a file error: no Application, never counted as one)."""
    refused: dict[str, str] = field(default_factory=dict)
    """``namespace/name`` -> why, for Applications that failed with no object's API call failing:
    refused in Git (invalid, outside ``--allowed-namespaces``), or kept because their file is
    invalid. Each counts as its Application object failed."""
    held_back: dict[str, str] = field(default_factory=dict)
    """``namespace/name`` -> why the prune of an Application no longer in Git was held back by a
    refused file that could hide it (``hidden``): the file, line and rule, for its status."""
    retry_at: datetime.datetime | None = None
    """The earliest ``status.nextRetryTime`` among the Applications this pass attempted or
    skipped (see ``backoff``); ``run`` schedules a pass then when it comes before the interval."""
    rechecks: dict[str, datetime.datetime] = field(default_factory=dict)
    """``namespace/name`` -> when ``run`` should look again at an Application whose Deployment is
    in a rollout not yet decided (``deployment.recheck_at``): nothing watched changes when its
    pods start failing or a failure's grace ends. Such an Application is not kept steady
    (``remember``); each is also in ``retry_at``."""
    backing_off: dict[str, Any] = field(default_factory=dict)
    """``namespace/name`` -> ``backoff.Waiting`` for each Application a ``run`` pass skipped."""
    notices: list[Any] = field(default_factory=list)
    """``news.Notice`` of every Application whose stored status moved in a way worth telling
    (``news.news``, at a status write that succeeded) or that the pass pruned; in the order
    the statuses were written (Application key order), prunes first."""
    readiness: dict[str, tuple[str, str]] = field(default_factory=dict)
    """``namespace/name`` -> (``Ready`` condition status ``True``/``False``, its reason) as the
    pass wrote or kept it, for each Application from Git (not hand-applied ones); read by the
    commit status (``agent.notify.commitstatus.verdict``)."""
    attributed: dict[str, str] = field(default_factory=dict)
    """``namespace/name`` -> the full SHA its outcome is about (``news.about`` of the status the
    pass wrote or kept), for each Application in ``readiness`` whose status names one: the commit
    that deployed its content (``lastChangedCommit``) while it is synced, else the commit the pass
    attempted. The commit status posts a rollout's outcome there (``commitstatus.verdicts``)."""
    replaced: set[str] = field(default_factory=set)
    """Full SHAs of the commits whose content an Application's stored status replaced before
    their rollout was decided (``news.replaced``): the commit status looks at them again
    (``commitstatus.verdicts``), so a ``pending`` on one gets a final state."""
    health: dict[str, Obj] = field(default_factory=dict)
    """``namespace/name`` -> ``{"status", "message"}``: the health the pass wrote to each
    Application's status (``status.health_of``); updated by ``sync --wait`` as it waits."""
    shared_health: dict[tuple[str, str], Obj] = field(default_factory=dict, repr=False, compare=False)
    """(status, message) -> the one ``health`` value of that content this pass (``statuses.record_health``):
    most Applications share a health ("all children healthy"), and ``run`` keeps each in its
    ``steady.Entry``; read-only, as every ``health`` value."""
    synced: dict[str, Any] = field(default_factory=dict)
    """``namespace/name`` -> ``status.Outcome`` (``changed`` False) of each Application from this
    source's Git that the pass synced: what ``sync --wait`` waits for, rewriting its status with
    this outcome (``readiness``); None for one it does not wait for (suspended, a child held)."""
    failures: dict[str, str] = field(default_factory=dict)
    """``namespace/name`` -> why the pass could not sync the Application (an API refusal of it or
    a child, a spec the schema refuses, someone else's object in a child's slot): its status's
    message. Not every ``failed`` Application is here: a failed prune or another source's
    Application is not a failed sync of it."""
    reasons: dict[str, str] = field(default_factory=dict)
    """``namespace/name`` -> the condition reason of a ``failures`` entry retrying cannot fix
    (``conditions.failure_reason``); absent: ``SyncFailed``."""
    tasks: dict[str, str] = field(default_factory=dict)
    """``namespace/name`` -> ``TaskRunning`` or ``TaskFailed``: the Applications whose tasks hold
    them after the pass (``taskgate``); ``sync --once --wait`` passes again while one runs
    (``taskwait``)."""
    source_seen: bool = False
    """The pass asked the source and read its commit (False: it failed, or reused the last
    commit without asking Git): only then is a ``SourceAvailable`` condition dropped."""

    @property
    def ok(self) -> bool:
        """No errors and no Application skipped: one in backoff is still failing (``run``)."""
        return not self.errors and not self.backing_off

    @property
    def changed(self) -> bool:
        """True when the pass created, configured, recreated, adopted or pruned anything."""
        return any(c.action in (CREATED, CONFIGURED, RECREATED, ADOPTED, PRUNED) for c in self.changes)

    def add(self, application: str, subject: str, action: Action, message: str = "",
            warnings: tuple[str, ...] = ()) -> None:
        self.changes.append(Change(application, subject, action, message, warnings))
        if action == FAILED:
            self.failed.add(application)
            self.errors.append(f"{subject}: {message}")

    def failing(self) -> list[str]:
        """Sorted ``namespace/name`` of every Application that failed: an object's API call
        failed (``failed``) or it was refused (``refused``). Never a file."""
        return sorted(self.failed | set(self.refused))

    def skipping(self) -> list[str]:
        """Sorted ``namespace/name`` of every Application the pass skipped (``backing_off``)."""
        return sorted(self.backing_off)

    def file_errors(self) -> list[str]:
        """Sorted ``path`` or ``path:line`` of each refused file or document that names no
        Application (YAML syntax, another kind, a file over a limit)."""
        return sorted({what for what, _ in self.invalid if what not in self.refused})

    def failed_files(self) -> list[str]:
        """Sorted distinct paths of the ``file_errors`` (``path:line`` without its line)."""
        return sorted({_file(what) for what in self.file_errors()})

    def outcomes(self) -> list[Change]:
        """``changes`` plus one failed ``Application/namespace/name`` (with the reason) for each
        ``refused`` Application that has no failed object of its own: what counts and reports
        (text, json, markdown) are made of, so they agree on what failed."""
        with_failure = {c.application for c in self.changes if c.action == FAILED}
        return self.changes + [Change(app, f"Application/{app}", FAILED, why)
                               for app, why in sorted(self.refused.items()) if app not in with_failure]

    def counts(self) -> dict[str, int]:
        """Number of ``outcomes`` per action: ``failed`` counts the objects whose API call failed
        and each refused Application (once), never a file error."""
        out: dict[str, int] = {}
        for change in self.outcomes():
            out[change.action] = out.get(change.action, 0) + 1
        return out

    def summary(self) -> str:
        """Multi-line text: the commit, per Application its objects and actions and its health
        (``  health: Progressing (message)``, when the pass wrote its status), under an object each
        warning the API server gave on its write (``    warning: would violate PodSecurity ...``), notes, the
        refused documents and files with their reasons, and a closing line with the counts of
        objects per action (``counts``), the Applications that failed and the files that failed,
        e.g. ``sync failed: ..., 1 failed; 1 Application failed: ns/web; 1 file failed: x.yaml:1, x.yaml:5``
        (distinct files are counted; each refused document of one is listed) or ``...; 1 Application
        skipped: ns/db`` (in backoff: the pass failed). Every line is
        ``printable``: control characters in file names and messages are escaped.
        Errors are separate (``errors``), for stderr."""
        lines = [f"commit {self.commit}" if self.commit else "commit: none (source not fetched)"]
        by_app: dict[str, list[Change]] = {}
        for change in self.changes:
            by_app.setdefault(change.application, []).append(change)
        for app in sorted(by_app):
            lines.append(f"{app}:")
            for change in by_app[app]:
                suffix = f" ({change.message})" if change.message else ""
                lines.append(f"  {change.subject} {change.action}{suffix}")
                lines += [f"    warning: {text}" for text in change.warnings]
            if app in self.health:
                health = self.health[app]
                lines.append(f"  health: {health['status']}" + (f" ({health['message']})" if health.get("message") else ""))
        lines += [f"note: {n}" for n in self.notes]
        if self.invalid:
            lines.append("invalid (not applied):")
            # a file error's reason already names its file; an Application keeps its name, and one
            # with no usable name its document's place (what the closing line names), said as such
            # so two locations in a row do not read as one (unless they are the same: said once)
            lines += [f"  {reason}" if reason.startswith(f"{what}:") or (what not in self.refused
                                                                          and reason.startswith(f"{_file(what)}:"))
                      else f"  Application at {what}: {reason}" if ":" in what  # a namespace/name has no colon
                      else f"  {what}: {reason}" for what, reason in self.invalid]
        counts = self.counts()
        tally = ", ".join(f"{counts.get(a, 0)} {a}" for a in (CREATED, CONFIGURED, UNCHANGED, PRUNED, FAILED))
        for extra in (RECREATED, ADOPTED, KEPT, SUSPENDED, HELD, SKIPPED):
            if counts.get(extra):
                tally += f", {counts[extra]} {extra}"
        verdict = "sync succeeded" if self.ok else "sync failed"
        failed = "".join(f"; {n} {noun}{'s' if n != 1 else ''} {what}: {', '.join(names)}" for noun, what, n, names in (
            ("Application", "failed", len(self.failing()), self.failing()),
            ("Application", "skipped", len(self.skipping()), self.skipping()),
            ("file", "failed", len(self.failed_files()), self.file_errors())) if names)  # files counted once, listed by line
        lines.append(f"{verdict}: {tally}{failed}")
        return "\n".join(map(printable, lines))  # each entry is one line: a file name cannot break it


def printable(text: str) -> str:
    """``text`` for a human (a line on stderr, the text summary, markdown): every character that is
    not printable (newline, carriage return, tab, ESC and other control or format characters, as
    ``str.isprintable`` says) written as an escape (``\\n``, ``\\x1b``, ``\\u202e``), so a file name
    in Git can neither break a line nor drive the terminal; every other character is kept. JSON
    output keeps the real string (JSON escapes it itself)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _ESCAPES.get(c) or (
        f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
        for c in text)


def _file(what: str) -> str:
    """The path of a file error's ``path:line`` or ``path``."""
    path, _, line = what.rpartition(":")
    return path if path and line.isdigit() else what
