"""repository.identity: one repository, one identity, in every URL form Git accepts."""

import os

import pytest

from agent.source import mirror as source, repository


@pytest.mark.parametrize("url", [
    "https://github.com/Org/repo.git",
    "https://user:tok@github.com/Org/repo",
    "ssh://git@github.com/Org/repo.git",
    "git@github.com:Org/repo.git",
    "http://github.com/Org/repo/",
    "https://GitHub.com/Org/repo",  # the host is not case sensitive
    "https://github.com:443/Org/repo",  # default ports name nothing
    "http://github.com:80/Org/repo",
    "ssh://git@github.com:22/Org/repo",
    "git+ssh://git@github.com/Org/repo.git",
    "git://github.com:9418/Org/repo",
    "github.com:Org/repo",  # scp-like without a user
    "git@github.com:/Org/repo.git/",
    "  https://github.com/Org/repo.git\n",
    "https://x-access-token:ghp_secret@github.com/Org/repo.git",
])
def test_every_url_form_of_one_repository_is_one_identity(url):
    assert repository.identity(url) == "github.com/Org/repo"
    assert source.repository_identity(url) == "github.com/Org/repo"  # the name source.py exports


@pytest.mark.parametrize("url, expected", [
    ("https://github.com/org/repo", "github.com/org/repo"),  # the path keeps its case
    ("https://github.com/Org/other", "github.com/Org/other"),
    ("https://gitlab.com/Org/repo", "gitlab.com/Org/repo"),
    ("https://git.example.com:8443/Org/repo.git", "git.example.com:8443/Org/repo"),  # other ports stay
    ("ssh://git@git.example.com:2222/Org/repo.git", "git.example.com:2222/Org/repo"),
    ("http://github.com:443/Org/repo", "github.com:443/Org/repo"),  # 443 is not http's default
    ("https://[2001:DB8::1]:443/Org/repo", "[2001:db8::1]/Org/repo"),
    ("https://[::1]:8443/repo.git", "[::1]:8443/repo"),
    ("https://github.com/Org/group/sub/repo.git", "github.com/Org/group/sub/repo"),
    ("https://github.com", "github.com"),
    ("https://github.com/Org/repo.git.git", "github.com/Org/repo.git"),  # one .git only
    ("https://github.com/Org/repo?x=1#frag", "github.com/Org/repo"),
])
def test_other_repositories_stay_apart(url, expected):
    assert repository.identity(url) == expected


def test_no_identity_carries_a_credential():
    for url in ("https://user:tok3n@host/r", "ssh://deploy:pw@host/r", "deploy@host:r"):
        assert "tok3n" not in repository.identity(url) and "@" not in repository.identity(url)


def test_local_paths_and_file_urls_are_the_absolute_real_path(tmp_path, monkeypatch):
    real = tmp_path / "repos" / "apps.git"
    real.mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    monkeypatch.chdir(tmp_path)
    expected = os.path.realpath(real)
    for url in (str(real), f"{real}/", "repos/apps.git", "./repos/../repos/apps.git", str(link),
                f"file://{real}", f"file://{link}/", f"file://localhost{real}"):
        assert repository.identity(url) == expected, url
    # a local path is never stripped: /srv/repo and /srv/repo.git are two directories
    assert repository.identity(str(tmp_path / "repos" / "apps")) != expected
    assert repository.identity(f"file://{tmp_path}/with%20space") == os.path.realpath(tmp_path / "with space")
    assert repository.identity("./a:b") == os.path.realpath(tmp_path / "a:b")  # a slash before the colon


def test_local_and_remote_identities_never_meet():
    assert repository.identity("/github.com/Org/repo").startswith("/")
    assert not repository.identity("https://github.com/Org/repo").startswith("/")


@pytest.mark.parametrize("url, expected", [
    ("git@host:org/re:po.git", "host/org/re:po"),  # only the first colon ends an scp-like host
    ("https://h/Xorg/repoX.git", "h/Xorg/repoX"),  # only slashes are stripped from the path
])
def test_remote_edge_cases(url, expected):
    assert repository.identity(url) == expected


def test_local_edge_cases(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert repository.identity("file://") == "/"  # no path: the root
    assert repository.identity(":x") == os.path.realpath(tmp_path / ":x")  # no host before the colon
    assert repository.identity("/srv/a:b") == "/srv/a:b"  # a slash first: a path, not host:path
    assert repository.identity("dir/a:b/repo") == os.path.realpath(tmp_path / "dir/a:b/repo")


@pytest.mark.parametrize("url, parts", [
    ("https://user:tok@GitHub.com:443/Org/repo.git", ("https", "github.com", "", "Org/repo")),
    ("ssh://git@GHE.example.com:2222/team/apps/", ("ssh", "ghe.example.com", "2222", "team/apps")),
    ("git@github.com:Org/repo.git", ("ssh", "github.com", "", "Org/repo")),
    ("github.com:Org/repo", ("ssh", "github.com", "", "Org/repo")),
    ("GIT+SSH://git@host/r.git", ("git+ssh", "host", "", "r")),
    ("https://[2001:DB8::1]:8443/o/r", ("https", "[2001:db8::1]", "8443", "o/r")),
    ("https://github.com/", ("https", "github.com", "", "")),
])
def test_remote_gives_the_parts_identity_is_made_of(url, parts):
    found = repository.remote(url)
    assert (found.scheme, found.host, found.port, found.path) == parts
    host = f"{found.host}:{found.port}" if found.port else found.host
    assert repository.identity(url) == (f"{host}/{found.path}" if found.path else host)


@pytest.mark.parametrize("url", ["/srv/git/apps", "file:///srv/git/apps", "FILE:///srv/x", "./apps", "apps/x:y"])
def test_a_local_path_is_no_remote(url):
    assert repository.remote(url) is None
