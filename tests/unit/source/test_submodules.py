"""submodules: relative URL resolution as Git does it, the same-host rule for credentials, and
the token header appended to (never overwriting) the user's GIT_CONFIG_* entries."""

import pytest

from agent.source import mirror as source, submodules


# Cases from Git's own t/t0060-path-utils.sh (test_submodule_relative_url, without up_path).
@pytest.mark.parametrize("base, url, expected", [
    ("../foo/bar", "../submodule", "../foo/submodule"),
    ("../foo", "../submodule", "../submodule"),
    ("./foo/bar", "../submodule", "foo/submodule"),
    ("./foo", "../submodule", "submodule"),
    ("foo/bar", "../submodule", "foo/submodule"),
    ("foo", "../submodule", "submodule"),
    ("//somewhere else/repo", "../subrepo", "//somewhere else/subrepo"),
    ("/tmp/w/subsuper_update_r", "../subsubsuper_update_r", "/tmp/w/subsubsuper_update_r"),
    ("/tmp/w/.", "../.", "/tmp/w/."),
    ("/tmp/w", "./.", "/tmp/w/."),
    ("/tmp/w/addtest", "../repo", "/tmp/w/repo"),
    ("/tmp/w", "./ ", "/tmp/w/ "),
    ("/tmp/w/home2/../remote", "../bundle1", "/tmp/w/home2/../bundle1"),
    ("file:///tmp/repo", "../subrepo", "file:///tmp/subrepo"),
    ("helper:://hostname/repo", "../subrepo", "helper:://hostname/subrepo"),
    ("ssh://hostname/repo", "../subrepo", "ssh://hostname/subrepo"),
    ("ssh://hostname:22/repo", "../subrepo", "ssh://hostname:22/subrepo"),
    ("user@host:path/to/repo", "../subrepo", "user@host:path/to/subrepo"),
    ("user@host:repo", "../subrepo", "user@host:subrepo"),
    # the cases this agent meets
    ("https://git.example.com/org/apps.git", "../team-b.git", "https://git.example.com/org/team-b.git"),
    ("https://git.example.com/org/apps.git/", "../team-b.git", "https://git.example.com/org/team-b.git"),
    ("https://git.example.com/org/apps.git", "../../other/x.git", "https://git.example.com/other/x.git"),
    ("https://git.example.com/org/apps.git", "./sub/", "https://git.example.com/org/apps.git/sub"),
    ("/srv/git/apps", "../team-b", "/srv/git/team-b"),
    # absolute and non-relative URLs are returned unchanged
    ("/srv/git/apps", "https://other.example.com/x.git", "https://other.example.com/x.git"),
    ("/srv/git/apps", "/srv/git/x", "/srv/git/x"),
    ("/srv/git/apps", "git@host:x.git", "git@host:x.git"),
])
def test_resolve_url_matches_git(base, url, expected):
    assert submodules.resolve_url(url, base) == expected


@pytest.mark.parametrize("base", ["../foo", "./foo"])
def test_resolve_url_refuses_to_climb_above_a_relative_base(base):
    with pytest.raises(ValueError):
        submodules.resolve_url("../../../x", base)


@pytest.mark.parametrize("url, expected", [
    ("https://Git.Example.com/org/a.git", ("https", "git.example.com", 443)),
    ("https://git.example.com:443/a.git", ("https", "git.example.com", 443)),
    ("https://git.example.com:8443/a.git", ("https", "git.example.com", 8443)),
    ("http://git.example.com/a.git", ("http", "git.example.com", 80)),
    ("ssh://git@git.example.com/a.git", ("ssh", "git.example.com", 22)),
    ("ssh://git@git.example.com:2222/a.git", ("ssh", "git.example.com", 2222)),
    ("git@git.example.com:org/a.git", ("ssh", "git.example.com", 22)),
    ("/srv/git/a", None),
    ("file:///srv/git/a", None),
    ("./relative", None),
])
def test_origin(url, expected):
    assert submodules.origin(url) == expected


TOKEN = source.Credentials(token="s3cr3t-token")


@pytest.mark.parametrize("sub, main, sent", [
    ("https://git.example.com/org/b.git", "https://git.example.com/org/a.git", True),
    ("https://git.example.com:443/b.git", "https://git.example.com/a.git", True),
    ("https://evil.example.com/b.git", "https://git.example.com/a.git", False),
    ("https://git.example.com.evil.org/b.git", "https://git.example.com/a.git", False),
    ("http://git.example.com/b.git", "https://git.example.com/a.git", False),
    ("https://git.example.com:8443/b.git", "https://git.example.com/a.git", False),
    ("ssh://git@git.example.com/b.git", "git@git.example.com:org/a.git", True),
    ("ssh://git@git.example.com:2222/b.git", "git@git.example.com:org/a.git", False),
    ("/srv/git/b", "/srv/git/a", False),
    ("file:///srv/git/b", "file:///srv/git/a", False),
])
def test_credentials_go_to_the_same_scheme_host_and_port_only(sub, main, sent):
    assert submodules.credentials_for(sub, main, TOKEN) == (TOKEN if sent else None)


def test_token_header_is_appended_to_the_users_git_config_entries(monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.file.allow")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "always")
    env = source._git_env(10, TOKEN)
    assert env["GIT_CONFIG_COUNT"] == "3"
    assert env["GIT_CONFIG_KEY_1"] == "http.extraHeader"
    assert env["GIT_CONFIG_VALUE_1"].startswith("Authorization: Basic ")
    assert (env["GIT_CONFIG_KEY_2"], env["GIT_CONFIG_VALUE_2"]) == ("http.followRedirects", "false")
    assert "GIT_CONFIG_KEY_0" not in env and "GIT_CONFIG_VALUE_0" not in env


def test_token_header_without_user_entries(monkeypatch):
    monkeypatch.delenv("GIT_CONFIG_COUNT", raising=False)
    env = source._git_env(10, TOKEN)
    assert env["GIT_CONFIG_COUNT"] == "2" and env["GIT_CONFIG_KEY_0"] == "http.extraHeader"
    assert env["GIT_CONFIG_KEY_1"] == "http.followRedirects" and env["GIT_CONFIG_VALUE_1"] == "false"
    assert "GIT_CONFIG_COUNT" not in source._git_env(10, None)  # no token: Git's redirects as ever


@pytest.mark.parametrize("config, allow_list, allowed", [
    ({}, None, False),  # Git's default for file is "user": refused for a submodule
    ({"protocol.file.allow": "always"}, None, True),
    ({"protocol.file.allow": "Always "}, None, True),
    ({"protocol.file.allow": "user"}, None, False),
    ({"protocol.file.allow": "never", "protocol.allow": "always"}, None, False),
    ({"protocol.allow": "always"}, None, True),
    ({"protocol.file.allow": "always"}, "https:ssh", False),  # GIT_ALLOW_PROTOCOL decides alone
    ({}, "https:file", True),
    ({}, "", False),
])
def test_file_protocol_follows_gits_rule(config, allow_list, allowed):
    assert submodules.file_protocol_allowed(config, allow_list) is allowed


@pytest.mark.parametrize("url, local", [("/srv/git/a", True), ("file:///srv/git/a", True), ("../b", True),
                                        ("https://h/a", False), ("git@h:a", False), ("ssh://h/a", False)])
def test_local_urls_are_those_git_fetches_with_the_file_protocol(url, local):
    assert submodules._local_url(url) is local
