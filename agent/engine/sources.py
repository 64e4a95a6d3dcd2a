"""Two sources, one Application: which source holds it (``other_source``), which others want it
(``wanted_by``, ``wanted_elsewhere``), and the refusal of another source's Application (``refuse``).

The rule (docs/guides/scale-out.md, "Two sources, one Application"): the source that holds an
Application keeps it, and its holder never prunes it while another source's Git still has it.
"""

from __future__ import annotations

import hashlib
from typing import cast

from agent.api.labels import REPOSITORY, SOURCE_LABEL, SOURCE_PATH, WANTED_BY_PREFIX
from agent.api.objects import Obj
from agent.api.schema import GROUP, KIND
from agent.engine.conditions import Reason
from agent.engine.plan import Op, Step, identity, owned


def wanted_by(source: str) -> str:
    """The annotation key by which the source ``source`` (its id) records that its Git has an
    Application another source holds: ``labels.WANTED_BY_PREFIX`` and the first 12 hex digits
    of the SHA-256 of the id (an annotation key's name part is at most 63 characters; a source
    id may be longer and hold characters a key may not)."""
    return WANTED_BY_PREFIX + hashlib.sha256(source.encode()).hexdigest()[:12]


def other_source(live: Obj | None, source: str) -> str | None:
    """The id of the source that holds the live Application ``live`` when it is not ``source``
    (this source's id), else None.

    The rule (docs/guides/scale-out.md, "Two sources, one Application"): the source that holds
    an Application keeps it; an Application holds its source in the ``heumsi.github.io/source``
    label, on an Application the agent applied (``owned``). Another id there, whatever the
    repository or ``--path`` (two paths of one repository, two repositories, a changed
    ``--path``), is another source: this one never applies it. Taken over, as before: no source
    label, or no agent ownership at all (hand-applied). A shared ``--source-id`` is one source.
    """
    if live is None or identity(live)[:2] != (GROUP, KIND) or not owned(live):
        return None
    holder = (live["metadata"].get("labels") or {}).get(SOURCE_LABEL)
    return holder if holder and holder != source else None


def wanted_elsewhere(live: Obj, source: str | None = None) -> list[tuple[str, str]]:
    """``(source id, file)`` for each source other than ``source`` whose Git also has the
    Application ``live`` (its wanted-by annotation, ``wanted_by``: value ``"<source id> <file>"``;
    a value without a space is an id with no file), sorted. The holder never prunes an
    Application while this is not empty."""
    annotations = live.get("metadata", {}).get("annotations") or {}
    mine = wanted_by(source) if source is not None else None
    out = []
    for key, value in annotations.items():
        if key.startswith(WANTED_BY_PREFIX) and key != mine:
            other, _, path = str(value).partition(" ")
            out.append((other, path))
    return sorted(out)


def hand_over(namespace: str, name: str, source: str) -> str:
    """The command that hands the Application ``namespace/name`` over to the source ``source``:
    its label names the new holder, whose next pass applies it (uid and children unchanged)."""
    return f"kubectl -n {namespace} label application {name} {SOURCE_LABEL}={source} --overwrite"


def refuse(steps: list[Step], source: str, repository: str, where: dict[str, str],
           former: tuple[str, ...] = ()) -> tuple[list[Step], list[tuple[Step, str]]]:
    """Take out of ``steps`` the Applications another source holds (``other_source``).
    ``source``, ``repository``: this source's id and repository identity; ``where``:
    ``namespace/name`` -> ``file:line`` of the document in Git. Returns ``(steps, refused)``:
    the other steps in their order, and per refused step a one-line message (without the
    ``Application/ns/name: `` prefix the report adds) led by ``OwnershipConflict`` and naming
    both sources (ids, repositories), both files (this one's in Git, the holder's from the live
    Application: its ``status.sourcePath``, else its ``heumsi.github.io/source-path``) and the
    hand-over command (``hand_over``). The caller counts each as a failed Application, applies
    and writes nothing to it but its own wanted-by annotation (no status, no Event) and never
    prunes it or its children (another source's; ``owned``). ``former``: this source's former
    ids (``Options.former_source_ids``): an Application one of them holds is not refused; its
    apply writes this source's label over the former one."""
    out, refused = [], []
    for step in steps:
        holder = other_source(step.live, source) if step.action != Op.PRUNE else None
        if holder is None or holder in former:
            out.append(step)
        else:
            refused.append((step, _refusal(step, holder, source, repository, where)))
    return out, refused


def _refusal(step: Step, holder: str, source: str, repository: str, where: dict[str, str]) -> str:
    """``refuse``'s message for ``step``, whose live Application the source ``holder`` holds.
    What comes from the live object is quoted and cut to 200 characters (a hand edit could
    make it anything; the report escapes what is not printable)."""
    _, _, namespace, name = step.identity
    live = cast(Obj, step.live)  # an Application another source holds: it exists
    annotations = live["metadata"].get("annotations") or {}
    theirs = (live.get("status") or {}).get("sourcePath") or annotations.get(SOURCE_PATH)
    other_repo = annotations.get(REPOSITORY)
    about = ", ".join([f"repository {str(other_repo)[:200]!r}"] * bool(other_repo)
                      + [f"file {str(theirs)[:200]!r}"] * bool(theirs))
    return (f"{where.get(f'{namespace}/{name}', '?')}: {Reason.OWNERSHIP_CONFLICT}: not applied: "
            f"source {holder[:200]!r}"
            f"{f' ({about})' if about else ''} holds it; this source {source!r} (repository {repository!r}) has it "
            "too. This source leaves it, its status and its children as they are, and neither source prunes it "
            "while the other has it in Git. Keep it in one source only, or hand it over to this one: "
            f"{hand_over(namespace, name, source)}")
