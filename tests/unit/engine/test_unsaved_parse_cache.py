"""A pass whose parse cache cannot be written says so in its report (issue 42: on a full disk
``sync`` exited 0 with no word), and does everything else as ever."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent.engine.report import CONFIGURED, CREATED
from agent.engine.steady import Steady
from agent.source import mirror as source
from tests import faults
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



def test_a_read_of_the_changed_files_says_so_when_the_parse_cache_cannot_be_written(tmp_path):
    """``run`` reads a new commit from the files that changed (``steady.py``); the parse cache beside
    this source's mirror (the one its token fetched, over HTTP) is written at the end of that pass."""
    with faults.GitHttpServer(tmp_path / "srv") as server:
        world = World(tmp_path, credentials=source.Credentials(token="s3cret-token"))
        world.commit({"web.yaml": app_yaml("web"), "db.yaml": app_yaml("db")})
        bare = faults.bare_clone(world.repo.path, tmp_path / "srv" / "apps.git")
        world.opts = replace(world.opts, repo=server.url("apps.git"))
        steady = Steady(versions=lambda kind, namespace, name, read: (
            (world.kube.stored(kind, namespace, name) or {"metadata": {"resourceVersion": read}})["metadata"]
            ["resourceVersion"] if kind else read))
        assert world.sync(steady=steady).ok
        mirror = source.cache_path(world.opts.cache_dir, world.opts.repo, world.opts.credentials)
        assert mirror != source.cache_path(world.opts.cache_dir, world.opts.repo)  # the token's own mirror
        unwritable = Path(f"{mirror}.{world.opts.source_id}.parsed.json")
        unwritable.unlink()
        unwritable.mkdir()
        world.commit({"db.yaml": app_yaml("db", replicas=2)})
        faults.push(world.repo.path, bare)
        report = world.sync(steady=steady)
    assert report.ok and (f"Application/{NS}/db", CONFIGURED) in actions(report)
    notes = [n for n in report.notes if "could not write the parse cache" in n]
    assert len(notes) == 1 and str(unwritable) in notes[0]
