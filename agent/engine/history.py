"""An Application's deployment history in its status: the last distinct contents it deployed. Pure.

Why: "which commit actually changed this Application" is the question ``lastSyncedCommit``
cannot answer. In a monorepo every commit moves ``lastSyncedCommit`` of every Application,
whether or not it touched this one. So each distinct content the agent deployed is recorded
once, keyed by a digest of what the pass applies for the Application, as Flux's
``status.history`` does.

The content is the Application's ``spec``: its children are rendered from the spec alone, so a
digest of the spec is a digest of what the pass applies. A commit that changes other files, or
other Applications in the same file, leaves the digest, the history and ``lastChangedCommit``
as they are (the history is path-scoped in effect, and finer: per Application).

Shape of one entry (newest first, at most ``LIMIT``)::

    {"digest": "sha256:<64 hex>", "revision": "<full SHA that first brought this content>",
     "firstSyncedAt": "<RFC 3339>", "lastSyncedAt": "<RFC 3339>", "passes": <int >= 1>}

The history only moves on a status write the pass makes anyway (a change applied, or the synced
commit advanced, which is when ``lastSyncTime`` moves), so it costs no extra write.
"""

from __future__ import annotations

import hashlib
import json

from agent.api.objects import Obj

LIMIT = 5
"""How many distinct contents the history keeps."""


def digest(spec: object) -> str:
    """``sha256:<hex>`` of ``spec`` as canonical JSON (keys sorted, no spaces), so two specs that
    are equal as data have one digest whatever their key order in the YAML."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def record(history: list[Obj] | None, content: str, commit: str, now: str) -> list[Obj]:
    """The history after a pass that synced ``content`` (a ``digest``) from ``commit`` at ``now``.

    - the same content as the newest entry: that entry's ``lastSyncedAt`` and ``passes`` move;
    - an older entry's content again (a rollback): that entry moves to the front, keeping the
      commit that first brought it, with ``lastSyncedAt`` and ``passes`` moved;
    - new content: a new entry in front; the oldest beyond ``LIMIT`` are dropped.
    Entries that are not mappings with a digest (a hand-edited status) are dropped.
    """
    kept = [dict(e) for e in history or [] if isinstance(e, dict) and isinstance(e.get("digest"), str)]
    found = next((e for e in kept if e["digest"] == content), None)
    if found is None:
        found = {"digest": content, "revision": commit, "firstSyncedAt": now, "lastSyncedAt": now, "passes": 0}
    else:
        kept.remove(found)
    passes = found.get("passes")
    found["passes"] = (passes if isinstance(passes, int) and passes > 0 else 0) + 1
    found["lastSyncedAt"] = now
    return [found, *kept][:LIMIT]


def changed_commit(old_history: list[Obj] | None, old_changed: str | None, content: str, commit: str) -> str:
    """``lastChangedCommit`` after a pass that synced ``content`` from ``commit``: ``commit``
    when the content differs from the newest entry of ``old_history`` (or there is none),
    else ``old_changed`` (or, when that is absent, the newest entry's revision)."""
    newest = next((e for e in old_history or [] if isinstance(e, dict)), None)
    if newest is None or newest.get("digest") != content:
        return commit
    return old_changed or newest.get("revision") or commit


def fields(old: Obj, spec: object, commit: str | None, synced: bool, advanced: bool, now: str) -> Obj:
    """The status fields ``history``, ``lastChangedCommit`` and ``lastChangedCommitShort`` (7
    characters, for ``kubectl get``) after a pass. ``old``: the stored status. ``synced``: the
    pass synced the Application from Git at ``commit``; ``advanced``: it writes the status anyway
    (a change applied, or the synced commit moved). Otherwise the stored fields are kept as
    they are (an empty dict when there are none): so an upgrade from an agent without history
    writes nothing until the next commit or change, which starts the history."""
    history, changed = old.get("history"), old.get("lastChangedCommit")
    if synced and commit and advanced:
        content = digest(spec)
        changed = changed_commit(history, changed, content, commit)
        history = record(history, content, commit, now)
    out: Obj = {}
    if isinstance(history, list) and history:
        out["history"] = history
    if isinstance(changed, str) and changed:
        out["lastChangedCommit"] = changed
        out["lastChangedCommitShort"] = changed[:7]
    return out
