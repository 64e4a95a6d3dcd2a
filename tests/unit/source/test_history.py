"""source.history: the one reader of a mirror's history (commit info, subjects, diffs, files)."""

import subprocess

import pytest

from agent.source import history
from agent.source.mirror import SourceError

ENV = {"GIT_AUTHOR_NAME": "Ann", "GIT_AUTHOR_EMAIL": "ann@example.com", "GIT_COMMITTER_NAME": "Ann",
       "GIT_COMMITTER_EMAIL": "ann@example.com", "GIT_AUTHOR_DATE": "2026-01-02T03:04:05+00:00",
       "GIT_COMMITTER_DATE": "2026-01-02T03:04:05+00:00", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
       "PATH": "/usr/bin:/bin:/usr/local/bin"}


def git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def mirror(tmp_path):
    """A bare repository with two commits of ``app.yaml``: (its path, [first SHA, second SHA])."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    shas = []
    for n, subject in ((1, "first"), (2, "second")):
        (work / "app.yaml").write_text(f"replicas: {n}\n")
        git(work, "add", "app.yaml")
        git(work, "commit", "-q", "-m", subject)
        shas.append(git(work, "rev-parse", "HEAD"))
    git(tmp_path, "clone", "-q", "--bare", str(work), "mirror.git")
    return tmp_path / "mirror.git", shas


def test_subjects_of_many_commits_in_one_read(mirror):
    where, (first, second) = mirror
    missing = "0" * 40
    found = history.subjects(where, [first[:12], second, missing])
    assert found == {first[:12]: {"sha": first, "subject": "first", "author": "Ann", "date": "2026-01-02T03:04:05+00:00"},
                     second: {"sha": second, "subject": "second", "author": "Ann", "date": "2026-01-02T03:04:05+00:00"}}


def test_subjects_without_a_mirror_are_none(tmp_path):
    assert history.subjects(None, ["a" * 40]) == {}
    assert history.subjects(tmp_path / "nothing", ["a" * 40]) == {}


def test_commit_info_diff_and_file_of_a_commit(mirror):
    import git as gitpython

    where, (first, second) = mirror
    repo = gitpython.Repo(where)
    assert history.commit_info(repo, second) == {"author": "Ann <ann@example.com>",
                                                 "date": "2026-01-02T03:04:05+00:00", "subject": "second"}
    assert "-replicas: 1\n+replicas: 2" in history.file_diff(repo, second, "app.yaml")
    assert "+replicas: 1" in history.file_diff(repo, first, "app.yaml")  # a root commit: against the empty tree
    assert history.file_at(repo, first, "app.yaml") == b"replicas: 1\n"
    assert history.file_at(repo, first, "other.yaml") is None
    with pytest.raises(SourceError):
        history.commit_info(repo, "0" * 40)


def test_open_mirror_is_none_until_a_pass_made_it(tmp_path):
    assert history.open_mirror(tmp_path, "https://example.com/o/r") is None


def test_descends_tells_an_ancestor_from_another_line_of_history(mirror, tmp_path):
    where, (first, second) = mirror
    assert history.descends(where, first, second) and history.descends(where, second, second)
    assert not history.descends(where, second, first)
    work = tmp_path / "work"  # a rewritten history: an orphan commit, as a force-push leaves it
    git(work, "checkout", "-q", "--orphan", "other")
    git(work, "commit", "-q", "-m", "rewritten")
    git(where, "fetch", "-q", str(work), "other:other")
    assert not history.descends(where, first, git(work, "rev-parse", "HEAD"))
    with pytest.raises(SourceError, match="could not tell"):
        history.descends(where, "0" * 40, second)  # not in the mirror: Git cannot tell
    with pytest.raises(SourceError, match="not a commit SHA"):
        history.descends(where, "--all", second)


def test_blobs_at_and_blob_text(mirror):
    where, (first, second) = mirror
    blobs = history.blobs_at(where, first, ["app.yaml", "gone.yaml", "*.yaml"])  # paths are literal
    assert list(blobs) == ["app.yaml"] and blobs != history.blobs_at(where, second, ["app.yaml"])
    assert history.blob_text(where, blobs["app.yaml"]) == "replicas: 1\n"
    with pytest.raises(SourceError):
        history.blobs_at(where, "0" * 40, ["app.yaml"])
    with pytest.raises(SourceError):
        history.blob_text(where, "0" * 40)
