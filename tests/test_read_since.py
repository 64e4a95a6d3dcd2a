"""Reading a new commit from the files Git says changed (``snapshot.read_since``), without a cluster.

``run`` reads a pushed commit from the previous commit's snapshot and ``git diff-tree``, not by
walking 10,000 tree entries (issue 33). The rule these tests hold it to: ``read_since`` gives
exactly what ``read`` gives for the new commit (files, their bytes, blob ids, problems), or None
when it cannot tell; then the caller reads in full. Real repositories, real commits.
"""

from __future__ import annotations

import os

import pytest

from agent.source import mirror as source, snapshot as snapshots
from tests.support import GitRepo, app_yaml


def fetch(repo: GitRepo, cache) -> str:
    return source.fetch(str(repo.path), None, cache).commit


def same(a: snapshots.Snapshot, b: snapshots.Snapshot) -> None:
    assert (a.commit, a.blobs, a.problems, a.plain) == (b.commit, b.blobs, b.problems, b.plain)
    assert sorted(a.files) == sorted(b.files)
    assert {p: a.files[p] for p in a.files} == {p: b.files[p] for p in b.files}


def step(repo: GitRepo, cache, before: snapshots.Snapshot, path: str = "apps", **kwargs):
    """(read_since's snapshot or None, read's snapshot) of the repository's HEAD after ``before``."""
    commit = fetch(repo, cache)
    full = snapshots.read(str(repo.path), commit, cache, path, **kwargs)
    return snapshots.read_since(str(repo.path), before, commit, cache, path, **kwargs), full


@pytest.fixture
def start(repo, tmp_path):
    repo.write("apps/a.yaml", app_yaml("a"))
    repo.write("apps/team/b.yml", app_yaml("b"))
    repo.write("apps/.hidden/c.yaml", app_yaml("c"))
    repo.write("apps/README.md", "not a manifest")
    repo.write("other/d.yaml", app_yaml("d"))
    repo.commit("start")
    cache = tmp_path / "cache"
    return cache, snapshots.read(str(repo.path), fetch(repo, cache), cache, "apps")


@pytest.mark.parametrize("change", [
    "modify", "add", "delete", "rename", "hidden", "outside", "not-a-manifest", "dir-to-file", "nothing",
    "many", "too-big", "too-big-fixed", "executable"])
def test_each_change_reads_as_a_full_read_does(repo, start, change):
    cache, before = start
    if change == "too-big-fixed":
        repo.write_bytes("apps/big.yaml", b"#" * 2000)
        repo.commit()
        before, _ = step(repo, cache, before, max_file_bytes=1000)
        assert before is not None and before.problems
    edit = {
        "modify": lambda: repo.write("apps/a.yaml", app_yaml("a", image="nginx:2")),
        "add": lambda: repo.write("apps/new/e.yaml", app_yaml("e")),
        "delete": lambda: repo.remove("apps/team/b.yml"),
        "rename": lambda: repo.move("apps/a.yaml", "apps/moved/a.yaml"),
        "hidden": lambda: repo.write("apps/.hidden/c.yaml", app_yaml("c", image="x:1")),
        "outside": lambda: repo.write("other/d.yaml", app_yaml("d", image="x:1")),
        "not-a-manifest": lambda: repo.write("apps/README.md", "changed"),
        "dir-to-file": lambda: (repo.remove("apps/team"), repo.write("apps/team", "a file now")),
        "nothing": lambda: None,
        "many": lambda: [repo.write(f"apps/m/{i}.yaml", app_yaml(f"m{i}")) for i in range(30)],
        "too-big": lambda: repo.write_bytes("apps/big.yaml", b"#" * 2000),
        "too-big-fixed": lambda: repo.write("apps/big.yaml", app_yaml("big")),
        "executable": lambda: os.chmod(repo.path / "apps/a.yaml", 0o755),
    }[change]
    edit()
    repo.commit(change)
    since, full = step(repo, cache, before, max_file_bytes=1000)
    assert since is not None
    same(since, full)
    assert since.plain


def test_the_files_parsed_before_are_deferred_and_read_on_demand(repo, start):
    cache, before = start
    repo.write("apps/a.yaml", app_yaml("a", image="nginx:2"))
    repo.commit()
    since, full = step(repo, cache, before, unneeded=lambda path, blob: path == "apps/team/b.yml")
    same(since, full)


@pytest.mark.parametrize("change", ["symlink", "submodule-path", "path-gone", "path-emptied"])
def test_what_a_diff_cannot_tell_is_read_in_full(repo, start, tmp_path, change, monkeypatch):
    cache, before = start
    if change == "symlink":
        os.symlink("../other/d.yaml", repo.path / "apps/link.yaml")
    elif change == "submodule-path":  # a gitlink anywhere, outside --path too
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{repo.head()},vendor/x")
    elif change == "path-gone":
        repo.remove("apps")
    else:
        repo.remove("apps/a.yaml")
        repo.remove("apps/team")
    repo.git("commit", "-q", "-m", change) if change == "submodule-path" else repo.commit(change)
    commit = fetch(repo, cache)
    assert snapshots.read_since(str(repo.path), before, commit, cache, "apps") is None


def test_a_snapshot_that_is_not_plain_or_from_another_repository_state_is_not_used(repo, start):
    cache, before = start
    repo.write("apps/a.yaml", app_yaml("a", image="nginx:2"))
    commit = repo.commit()
    fetch(repo, cache)
    not_plain = snapshots.Snapshot(before.commit, blobs=before.blobs, problems=before.problems, plain=False)
    assert snapshots.read_since(str(repo.path), not_plain, commit, cache, "apps") is None
    gone = snapshots.Snapshot("0" * 40, blobs=before.blobs, plain=True)  # not in the mirror
    assert snapshots.read_since(str(repo.path), gone, commit, cache, "apps") is None
    assert snapshots.read_since(str(repo.path), before, before.commit, cache, "apps") is None


def test_a_symlink_or_submodule_read_makes_the_snapshot_not_plain(repo, tmp_path):
    repo.write("apps/a.yaml", app_yaml("a"))
    os.symlink("a.yaml", repo.path / "apps/b.yaml")
    repo.commit()
    cache = tmp_path / "cache"
    assert not snapshots.read(str(repo.path), fetch(repo, cache), cache, "apps").plain
    os.remove(repo.path / "apps/b.yaml")
    repo.commit()
    assert snapshots.read(str(repo.path), fetch(repo, cache), cache, "apps").plain


def test_the_whole_repository_as_path(repo, tmp_path):
    repo.write("a.yaml", app_yaml("a"))
    repo.write(".github/w.yaml", "x: 1")
    repo.commit()
    cache = tmp_path / "cache"
    before = snapshots.read(str(repo.path), fetch(repo, cache), cache, ".")
    repo.write(".github/w.yaml", "x: 2")
    repo.write("b.yaml", app_yaml("b"))
    repo.commit()
    since, full = step(repo, cache, before, path=".")
    same(since, full)


def test_the_file_limit_holds(repo, start):
    cache, before = start
    for i in range(5):
        repo.write(f"apps/n/{i}.yaml", app_yaml(f"n{i}"))
    commit = repo.commit()
    fetch(repo, cache)
    with pytest.raises(source.SourceError, match="manifest files under 'apps'; the limit is 4"):
        snapshots.read_since(str(repo.path), before, commit, cache, "apps", max_files=4)
