"""A step of a pass after the changed Applications' statuses: keep this source's wanted-by mark
(``sources.wanted_by``) true on the live Applications (``mark_wanted``).

Why: an Application another source holds that this source's Git also has must never be pruned by
its holder while this source still wants it; the mark says so on the object itself, where the
holder's pass reads it (``sources.wanted_elsewhere``).
"""

from __future__ import annotations

from agent.api.objects import Obj
from agent.api.schema import KIND
from agent.engine import sources, writes
from agent.engine.passvalues import LiveState, Pass
from agent.kube.cluster import ApiError, Cluster


def mark_wanted(p: Pass, live: LiveState, refused: frozenset[str]) -> None:
    """Set the mark, to ``"<source id> <file>"``, on each Application another source holds that
    this source's Git has too (``refused``); remove it from each one that carries it and that
    this source now holds (after a hand-over) or no longer has in Git (not in a pass where a file
    failed: it may still be there; fail closed). A JSON merge patch each
    (``Kube.patch_annotations``: the holder's server-side apply never drops it), in the pool,
    only where the value differs: a steady state writes nothing. None in a dry run."""
    if p.kube.dry_run:
        return
    source_id, paths = p.opts.source_id, p.git.paths
    name = sources.wanted_by(source_id)
    patches: list[tuple[Obj, str, dict[str, str | None]]] = []
    for facts, app in zip(live.app_facts, live.apps):
        if (key := facts.key) in refused:
            want = f"{source_id} {paths[key]}"
        elif key in paths or not p.git.problems:
            want = None
        else:
            continue
        meta = app["metadata"]
        if (meta.get("annotations") or {}).get(name) != want and not meta.get("deletionTimestamp"):
            patches.append((app, key, {name: want}))
    for _ in writes.ordered(p.kube, patches, lambda patch, scratch: _annotate(p.kube, scratch, *patch), p.report):
        pass


def _annotate(kube: Cluster, report: writes.Scratch, app: Obj, key: str, annotations: dict[str, str | None]) -> None:
    """Write ``annotations`` on the Application ``app`` (``key``); a refusal is a note of the
    pass (the Application's own outcome is reported already), one that is gone is nothing; an
    unreachable API server (status 0) re-raises."""
    try:
        kube.patch_annotations(app, annotations)
    except ApiError as err:
        if err.status == 0:
            raise
        if err.status != 404:
            report.notes.append(f"{KIND}/{key}: could not write {', '.join(annotations)}: {err}")
