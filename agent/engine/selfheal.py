"""Stage 5c of a ``run`` pass: back off from an object another writer keeps changing (issue 46).

Why: drift is undone in one pass. But when another writer keeps undoing the agent's apply (a
controller, a script, a person in a loop), every one of its edits costs a pass, an apply and an
Event: a fault test saw about 3 writes and 1 new Event per edit, 412 Events in 30 s. Argo CD's
self-heal waits between its syncs of an Application (``selfHealTimeout``, then a growing
backoff); here the wait is per object.

The rule: a child's update is a correction when the agent applied the same desired object
before and its Application's document in Git did not change (``steady.Entry``), or an earlier
correction of it is on record. The first correction is at once; after the n-th one, the next
waits ``FIRST_WAIT`` * 2^(n-1) seconds, at most ``MAX_WAIT``. Meanwhile the child is reported
``held`` with the time of its next correction, and ``run`` passes again then (``retry_at``).
When the other writer stops, that pass corrects it, and the object stays as Git says. A record
older than ``FORGET_AFTER`` seconds is forgotten: the next edit is corrected at once again.
Only ``run`` keeps records (``Steady.fights``); ``sync --once`` corrects every time.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import time

from agent.api.objects import Obj
from agent.engine import plan
from agent.engine.passvalues import Pass
from agent.engine.report import HELD

FIRST_WAIT = 5.0  # seconds after the first correction (Argo CD's selfHealTimeout)
MAX_WAIT = 180.0  # the longest wait between two corrections (Argo CD's self-heal backoff cap: 3 min)
FORGET_AFTER = 2 * MAX_WAIT  # seconds with no correction after which an object's record goes


def digest(obj: Obj) -> str:
    """A short digest of the desired object ``obj`` (its JSON, keys sorted)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def wait(corrections: int) -> float:
    """Seconds to wait after ``corrections`` corrections (1 or more) before the next one."""
    return min(FIRST_WAIT * 2.0 ** (corrections - 1), MAX_WAIT)


def _unchanged_in_git(p: Pass, key: str, ident: plan.Identity) -> bool:
    """True when the previous pass left the Application ``key`` synced from the same document
    in Git and with the child ``ident``: an update of it now undoes someone else's edit."""
    entry = p.steady.entries.get(key) if p.steady is not None else None
    if entry is None:
        return False
    path = entry.document[0]
    return p.git.paths.get(key) == path and p.git.blobs.get(path) == entry.document[2] \
        and any(child == ident for child, _ in entry.children)


def backed_off(p: Pass, steps: list[plan.Step]) -> list[plan.Step]:
    """``steps`` less the corrections whose time has not come (module docstring), each reported
    ``held``; the others pass, and each correction is recorded."""
    if p.steady is None:
        return steps
    fights, now, out = p.steady.fights, time.monotonic(), []
    for step in steps:
        if step.action != plan.Op.UPDATE or step.adopting or step.desired is None:
            out.append(step)
            continue
        key, ident, mark = plan.owner_key(step.target), step.identity, digest(step.desired)
        count, next_at, seen = fights.get(ident, (0, 0.0, ""))
        if seen != mark or now - next_at > FORGET_AFTER:
            count = 0
        if count == 0 and not _unchanged_in_git(p, key, ident):
            fights.pop(ident, None)  # Git changed it: an apply, not a correction
            out.append(step)
            continue
        if now < next_at:
            at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=next_at - now)
            p.report.add(key, step.subject, HELD, f"changed by another writer again; corrected {count} time"
                         f"{'s' if count != 1 else ''} already, next at {at.strftime('%H:%M:%S')} (self-heal backoff)")
            p.report.retry_at = at if p.report.retry_at is None else min(p.report.retry_at, at)
            continue
        fights[ident] = (count + 1, now + wait(count + 1), mark)
        out.append(step)
    return out
