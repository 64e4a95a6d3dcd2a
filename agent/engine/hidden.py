"""Which prunes a refused file could hide: the rule (``decide``, pure) and the Git reads it needs (``judge``).

Why: a file that does not parse or validate hides what it wants. Before this rule one such file
anywhere under ``--path`` blocked every prune of the source, so one team's typo held back every
other team's removals (issue 46 item 4). A refused file can only hide an Application whose
document was written into it, and writing into it changes it.

The rule. A pass at commit ``H`` has refused files (``Wanted.problems`` with a path: ``F``). A live
Application ``X`` of this source is not in ``H``'s valid set, so the plan prunes it. ``S`` is a
commit ``X`` was synced from (``seen_at``: ``status.lastSyncedCommit``, which only advances on a
pass that synced ``X`` from Git, then the ``heumsi.github.io/source-commit`` annotation). At ``S``
the pass saw ``X`` in the valid set. ``F`` blocks the prune of ``X`` when:

- ``F``'s content at ``H`` (its blob id) differs from its content at ``S``: it changed since, it is
  new, or its content is not one blob of this repository (a refused symlink, a submodule's file);
  a document may have moved into it. A file with the same content as at ``S`` was refused there
  too, while ``X`` was valid elsewhere; it cannot have gained ``X`` since.
- or ``F``'s text names ``X`` (``names``: its name as a whole word): ``X`` copied into ``F`` before
  it was removed from its own file, in two commits. A name spelled with YAML escapes is not
  found by this check; the first rule still blocks when that copy came after ``S``.

Every other prune goes ahead. Every prune is blocked, as before this rule, when the history
cannot be read (fail closed): a candidate records no commit, none of its commits is ``H`` or an
ancestor of ``H`` (a force-push that rewrote history, another ref, a mirror without it), Git
failed or timed out (``history.LOG_TIMEOUT`` a command), or more than ``MAX_COMMITS`` distinct
commits would be read. The blocked Application's status and ``explain`` name the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agent.api.labels import SOURCE_COMMIT
from agent.api.objects import Obj
from agent.engine.passvalues import Pass
from agent.source import history
from agent.source.mirror import SourceError

MAX_COMMITS = 16
"""How many distinct commits a pass reads for its prune candidates (2 Git commands each); more
blocks every prune (normally one: the previous pass's commit)."""
MAX_TEXTS = 64
"""How many refused files' texts a pass reads for ``names``; one not read counts as naming every
candidate."""
_HEX = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


@dataclass(frozen=True)
class Broken:
    """A refused file: ``path`` (repository-relative), ``where`` (its first error, ``file:line:
    field: rule``) and ``blob`` (its blob id at the pass's commit; None when not one blob)."""

    path: str
    where: str
    blob: str | None


@dataclass(frozen=True)
class Verdict:
    """``blocked``: key (``namespace/name``) -> why its prune is held back, naming the file and
    line; ``everything``: why every prune is held back (history unreadable), or None."""

    blocked: dict[str, str] = field(default_factory=dict)
    everything: str | None = None


def seen_at(app: Obj) -> tuple[str, ...]:
    """The commits (full hexadecimal SHAs) the live Application ``app`` was synced from:
    ``status.lastSyncedCommit``, then the ``source-commit`` annotation; each once, others left out."""
    status = app.get("status") or {}
    annotations = (app.get("metadata") or {}).get("annotations") or {}
    found = [c for c in (status.get("lastSyncedCommit"), annotations.get(SOURCE_COMMIT))
             if isinstance(c, str) and _HEX.match(c)]
    return tuple(dict.fromkeys(found))


def names(text: str, name: str) -> bool:
    """True when ``text`` holds ``name`` as a whole word: not inside a longer name, label or
    field (``api`` is not in ``apiVersion``, ``web`` not in ``web-2``)."""
    return re.search(rf"(?<![A-Za-z0-9_.-]){re.escape(name)}(?![A-Za-z0-9_.-])", text) is not None


def decide(gone: Mapping[str, Sequence[str]], broken: Sequence[Broken],
           trees: Mapping[str, Mapping[str, str] | None], texts: Mapping[str, str]) -> Verdict:
    """The rule (module docstring). ``gone``: key of each prune candidate -> its commits
    (``seen_at``); ``broken``: the refused files; ``trees``: commit -> path -> blob id of the
    refused paths at that commit, None when the commit is neither the pass's commit nor its
    ancestor, or Git could not tell; ``texts``: path -> a refused file's text (one missing names
    every candidate)."""
    blocked: dict[str, str] = {}
    for key in sorted(gone):
        readable = [(c, tree) for c in gone[key] if (tree := trees.get(c)) is not None]
        if not readable:
            return Verdict(everything=unreadable(key, gone[key]))
        name = key.partition("/")[2]
        hiding = [(b, why) for b in broken if (why := _hides(b, name, readable, texts))]
        if hiding:
            more = len(hiding) - 1
            blocked[key] = f"{hiding[0][0].where}; that file {hiding[0][1]}, so it may hold it" + (
                f" ({more} more such file{'s' if more > 1 else ''})" if more else "")
    return Verdict(blocked)


def _hides(b: Broken, name: str, readable: list[tuple[str, Mapping[str, str]]],
           texts: Mapping[str, str]) -> str | None:
    """Why the refused file ``b`` could hide the Application ``name`` last synced from the
    commits of ``readable`` ((commit, tree)), or None when it cannot."""
    if b.blob is None or not any(tree.get(b.path) == b.blob for _, tree in readable):
        return f"changed since commit {readable[0][0][:7]}, the last this Application was synced from"
    text = texts.get(b.path)
    if text is None or names(text, name):
        return "names it" if text is not None else "could not be read"
    return None


def unreadable(key: str, commits: Sequence[str]) -> str:
    """Why every prune is held back: the history of the candidate ``key`` (synced from
    ``commits``) cannot be read."""
    if not commits:
        return f"{key} records no commit it was synced from, so what moved since cannot be told"
    return (f"the history from commit {commits[0][:7]} ({key} was last synced from it) to this commit cannot be "
            "read (rewritten by a force-push, another ref, or not in the mirror)")


def judge(p: Pass, gone: dict[str, Obj]) -> Verdict:
    """``decide`` for the live Applications ``gone`` (key -> live object) the plan prunes, reading
    the mirror a pass fetched: ``history.descends`` and ``history.blobs_at`` of each distinct
    commit, ``history.blob_text`` of each refused file (every Git command bounded by
    ``history.LOG_TIMEOUT``). A failure of Git makes that commit unreadable (fail closed)."""
    first: dict[str, Broken] = {}
    for problem in p.git.problems:  # sorted by path and line: the first error of each file
        first.setdefault(problem.path, Broken(problem.path, str(problem), p.git.blobs.get(problem.path)))
    broken = list(first.values())
    seen = {key: seen_at(app) for key, app in gone.items()}
    commits = sorted({c for cs in seen.values() for c in cs})
    if len(commits) > MAX_COMMITS:
        return Verdict(everything=f"the Applications to prune were last synced from {len(commits)} commits, "
                                  f"more than the {MAX_COMMITS} a pass reads")
    mirror = history.mirror_path(p.opts.cache_dir, p.opts.repo, p.opts.credentials)
    head, paths = p.report.commit or "", sorted(first)
    trees: dict[str, Mapping[str, str] | None] = {}
    texts: dict[str, str] = {}
    for commit in commits:  # what was not read stays unknown: an unreadable commit blocks every prune
        try:
            trees[commit] = history.blobs_at(mirror, commit, paths) if history.descends(mirror, commit, head) else None
        except SourceError:
            trees[commit] = None
    for b in broken[:MAX_TEXTS]:  # an unread text names every candidate
        try:
            if b.blob is not None:
                texts[b.path] = history.blob_text(mirror, b.blob)
        except SourceError:
            pass
    return decide(seen, broken, trees, texts)
