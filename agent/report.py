"""What one pass did: the change set, the errors, and the human summary printed at the end."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

CREATED, CONFIGURED, UNCHANGED, PRUNED, FAILED = "created", "configured", "unchanged", "pruned", "failed"
KEPT = "kept"  # no longer in Git, not pruned (pruning off or blocked)
RECREATED = "recreated"  # deleted and created again: an immutable field differed from Git
SUSPENDED = "suspended"  # left exactly as it is: spec.suspend or heumsi.github.io/reconcile: disabled


@dataclass(frozen=True)
class Change:
    """One object's outcome. ``application``: ``namespace/name`` of the owning Application;
    ``subject``: ``Kind/namespace/name``; ``action``: created, configured, unchanged,
    recreated, pruned, kept, suspended or failed; ``message``: why, for failures, recreations,
    kept and suspended objects."""

    application: str
    subject: str
    action: str
    message: str = ""


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
    problems: list = field(default_factory=list)  # manifests.ManifestError behind file errors
    invalid: list[tuple[str, str]] = field(default_factory=list)
    """Refused documents or files: (what, reason), ``what`` being ``namespace/name`` of the
    Application when the document named one, else ``path:line``; counted as failed."""
    retry_at: datetime.datetime | None = None
    """The earliest ``status.nextRetryTime`` among the Applications this pass attempted or
    skipped (see ``backoff``); ``run`` schedules a pass then when it comes before the interval."""
    backing_off: dict = field(default_factory=dict)
    """``namespace/name`` -> ``backoff.Waiting`` for each Application a ``run`` pass skipped."""

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def changed(self) -> bool:
        """True when the pass created, configured, recreated or pruned anything."""
        return any(c.action in (CREATED, CONFIGURED, RECREATED, PRUNED) for c in self.changes)

    def add(self, application: str, subject: str, action: str, message: str = "") -> None:
        self.changes.append(Change(application, subject, action, message))
        if action == FAILED:
            self.failed.add(application)
            self.errors.append(f"{subject}: {message}")

    def counts(self) -> dict[str, int]:
        """Number of changes per action; ``failed`` also counts the refused documents
        (``invalid``), so that invalid Applications are never missing from the tally."""
        out: dict[str, int] = {}
        for change in self.changes:
            out[change.action] = out.get(change.action, 0) + 1
        if self.invalid:
            out[FAILED] = out.get(FAILED, 0) + len(self.invalid)
        return out

    def summary(self) -> str:
        """Multi-line text: the commit, per Application its objects and actions, notes and a
        closing line with the counts of objects per action (``failed`` counts objects whose
        API call failed) and the Applications that failed. Errors are separate (``errors``),
        for stderr."""
        lines = [f"commit {self.commit}" if self.commit else "commit: none (source not fetched)"]
        by_app: dict[str, list[Change]] = {}
        for change in self.changes:
            by_app.setdefault(change.application, []).append(change)
        for app in sorted(by_app):
            lines.append(f"{app}:")
            for change in by_app[app]:
                suffix = f" ({change.message})" if change.message else ""
                lines.append(f"  {change.subject} {change.action}{suffix}")
        lines += [f"note: {n}" for n in self.notes]
        if self.invalid:
            lines.append("invalid (not applied):")
            lines += [f"  {reason}" if reason.startswith(f"{what}:") else f"  {what}: {reason}"
                      for what, reason in self.invalid]  # a file's error already starts with file:line
        counts = self.counts()
        tally = ", ".join(f"{counts.get(a, 0)} {a}" for a in (CREATED, CONFIGURED, UNCHANGED, PRUNED, FAILED))
        for extra in (RECREATED, KEPT, SUSPENDED):
            if counts.get(extra):
                tally += f", {counts[extra]} {extra}"
        verdict = "sync failed" if self.errors else "sync succeeded"
        failing = sorted(self.failed | {what for what, _ in self.invalid})
        failed = (f"; {len(failing)} Application{'s' if len(failing) != 1 else ''} failed: "
                  f"{', '.join(failing)}") if failing else ""
        lines.append(f"{verdict}: {tally}{failed}")
        return "\n".join(lines)
