"""origin.repository_of: a checkout given by path is the repository its ``origin`` names (issue 46)."""

import os
import subprocess

import pytest

from agent.source import mirror as source, origin, repository


def git(*args, cwd=None):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def checkout(path, url=None):
    git("init", "-q", str(path))
    if url is not None:
        git("remote", "add", "origin", url, cwd=path)
    return str(path)


@pytest.mark.parametrize("url", [
    "https://github.com/Org/repo.git",
    "https://x-access-token:ghp_secret@github.com/Org/repo",  # credentials stripped
    "ssh://git@github.com/Org/repo.git",
    "git@github.com:Org/repo.git",
    "https://GitHub.com/Org/repo/",
])
def test_a_checkout_is_its_origin_in_every_spelling(tmp_path, url):
    path = checkout(tmp_path / "work", url)
    identity, former = origin.repository_of(path)
    assert identity == "github.com/Org/repo" == repository.identity("https://github.com/Org/repo")
    assert former == os.path.realpath(path)  # what an agent before issue 46 recorded
    assert "ghp_secret" not in identity
    assert source.source_id_of(identity, "apps") == source.source_id("https://github.com/Org/repo", "./apps/")


def test_a_url_keeps_its_identity_string_and_runs_no_git(monkeypatch):
    monkeypatch.setattr(origin, "origin_url", lambda path: pytest.fail("a URL is not a checkout"))
    for url in ("https://github.com/Org/repo.git", "git@github.com:Org/repo.git", "file:///srv/git/apps.git"):
        assert origin.repository_of(url) == (repository.identity(url), None)


def test_a_path_with_no_origin_stays_a_path(tmp_path):
    path = checkout(tmp_path / "work")
    git("remote", "add", "upstream", "https://github.com/Org/repo", cwd=path)  # only origin counts
    assert origin.repository_of(path) == (os.path.realpath(path), None)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert origin.repository_of(str(plain)) == (os.path.realpath(plain), None)
    assert origin.repository_of(str(tmp_path / "missing")) == (os.path.realpath(tmp_path / "missing"), None)


def test_a_directory_inside_a_checkout_is_not_that_checkout(tmp_path):
    checkout(tmp_path, "https://github.com/Org/repo")
    inner = tmp_path / "apps"
    inner.mkdir()
    assert origin.repository_of(str(inner)) == (os.path.realpath(inner), None)


def test_a_clone_of_a_local_bare_repository_is_that_repository(tmp_path):
    bare = tmp_path / "served.git"
    git("init", "-q", "--bare", str(bare))
    git("clone", "-q", str(bare), str(tmp_path / "ci"))
    git("clone", "-q", f"file://{bare}", str(tmp_path / "ci2"))
    served = repository.identity(f"file://{bare}")
    assert origin.repository_of(str(tmp_path / "ci"))[0] == served == repository.identity(str(bare))
    assert origin.repository_of(str(tmp_path / "ci2"))[0] == served
    git("remote", "add", "origin", "https://github.com/Org/repo", cwd=bare)  # one hop: a local origin is itself
    assert origin.repository_of(str(tmp_path / "ci"))[0] == served
    assert origin.repository_of(str(bare))[0] == "github.com/Org/repo"


def test_a_relative_origin_is_read_from_the_checkout(tmp_path):
    bare = tmp_path / "served.git"
    git("init", "-q", "--bare", str(bare))
    path = checkout(tmp_path / "work", "../served.git")
    assert origin.repository_of(path)[0] == os.path.realpath(bare)


def test_insteadof_is_applied_as_git_fetches(tmp_path):
    path = checkout(tmp_path / "work", "gh:Org/repo")
    git("config", "url.https://github.com/.insteadOf", "gh:", cwd=path)
    assert origin.repository_of(path)[0] == "github.com/Org/repo"


def test_is_local_path():
    assert origin.is_local_path("/srv/repo") and origin.is_local_path("./repo") and origin.is_local_path("/a:b")
    assert not origin.is_local_path("file:///srv/repo")
    assert not origin.is_local_path("git@github.com:Org/repo")
    assert not origin.is_local_path("https://github.com/Org/repo")


def test_origin_is_asked_again_only_when_a_config_file_changed(tmp_path, monkeypatch):
    """``run`` asks at every pass; a Git process on a push's way to its apply costs (issue 48)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = checkout(tmp_path / "work", "https://github.com/Org/one.git")
    runs = []
    real = origin.gitproc.run
    monkeypatch.setattr(origin.gitproc, "run", lambda *a, **k: runs.append(a) or real(*a, **k))
    assert origin.origin_url(path) == origin.origin_url(path) == "https://github.com/Org/one.git"
    assert len(runs) == 1
    git("remote", "set-url", "origin", "https://github.com/Org/two.git", cwd=path)
    assert origin.origin_url(path) == "https://github.com/Org/two.git" and len(runs) == 2
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".gitconfig").write_text('[url "https://example.com/"]\n\tinsteadOf = https://github.com/\n')
    assert origin.origin_url(path) == "https://example.com/Org/two.git" and len(runs) == 3  # a global rewrite
    assert origin.origin_url(path) == "https://example.com/Org/two.git" and len(runs) == 3
    (tmp_path / "home" / ".gitconfig").write_text("[include]\n\tpath = other\n")  # what it reads is not known
    assert origin.origin_url(path) == "https://github.com/Org/two.git" and len(runs) == 4
    assert origin.origin_url(path) == "https://github.com/Org/two.git" and len(runs) == 5
    git("remote", "remove", "origin", cwd=path)
    (tmp_path / "home" / ".gitconfig").unlink()
    assert origin.origin_url(path) is None and origin.origin_url(path) is None and len(runs) == 6


def test_a_legacy_remotes_file_or_a_worktree_config_is_read_again_when_it_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = checkout(tmp_path / "work")
    assert origin.origin_url(path) is None
    (tmp_path / "work" / ".git" / "remotes").mkdir(exist_ok=True)
    (tmp_path / "work" / ".git" / "remotes" / "origin").write_text("URL: https://github.com/Org/legacy.git\n")
    assert origin.origin_url(path) == "https://github.com/Org/legacy.git"
    (tmp_path / "work" / ".git" / "remotes" / "origin").unlink()
    git("config", "extensions.worktreeConfig", "true", cwd=path)
    git("config", "--worktree", "remote.origin.url", "https://github.com/Org/tree.git", cwd=path)
    assert origin.origin_url(path) == "https://github.com/Org/tree.git"
    git("config", "--worktree", "remote.origin.url", "https://github.com/Org/tree2.git", cwd=path)
    assert origin.origin_url(path) == "https://github.com/Org/tree2.git"
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "work" / ".git"))
    assert origin._configs(os.path.realpath(path)) is None  # what Git reads is not known here
