"""A pass whose parse cache cannot be written says so in its report (issue 42: on a full disk
``sync`` exited 0 with no word), and does everything else as ever."""

from __future__ import annotations

from pathlib import Path

from agent.engine.report import CREATED
from agent.source import mirror as source
from tests.unit.engine.passes import NS, World, actions, app_yaml


def test_a_parse_cache_that_cannot_be_written_is_a_note_of_the_pass(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml("web")})
    mirror = source.cache_path(world.opts.cache_dir, world.opts.repo, world.opts.credentials)
    unwritable = Path(f"{mirror}.{world.opts.source_id}.parsed.json")
    unwritable.mkdir(parents=True)  # the rename of the new file over it fails, as on a full disk
    report = world.sync()
    assert report.ok and (f"Application/{NS}/web", CREATED) in actions(report)
    notes = [n for n in report.notes if "could not write the parse cache" in n]
    assert len(notes) == 1 and str(unwritable) in notes[0]
    assert "note: could not write the parse cache" in report.summary()
    assert not [p for p in unwritable.parent.iterdir() if p.name.startswith(".parsed-")]
