"""The notification flags: bad input is one line and exit 2, and never shows the URL or a token."""

import pytest

from agent.cli import main, notify_flags


def run(capsys, *args):
    code = main.main(["sync", "--repo", "/nonexistent", *args])
    err = capsys.readouterr().err
    return code, err


def test_a_url_file_that_holds_no_url_is_refused_without_showing_it(tmp_path, capsys):
    (tmp_path / "url").write_text("ftp://hooks.example.com/secret-token-1\n")
    code, err = run(capsys, "--notify-url-file", str(tmp_path / "url"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "argument --notify-url-file" in err and "secret-token-1" not in err


def test_a_secret_without_a_url(tmp_path, capsys):
    (tmp_path / "s").write_text("k\n")
    code, err = run(capsys, "--notify-secret-file", str(tmp_path / "s"))
    assert code == 2 and "is not allowed without --notify-url-file" in err


def test_commit_status_needs_a_token_and_a_repository(tmp_path, capsys):
    code, err = run(capsys, "--commit-status", "github")
    assert code == 2 and "without --commit-status-token-file" in err
    (tmp_path / "t").write_text("tok-secret-2\n")
    code, err = run(capsys, "--commit-status", "gitea", "--commit-status-token-file", str(tmp_path / "t"))
    assert code == 2 and "without --commit-status-api-url" in err and "tok-secret-2" not in err


@pytest.mark.parametrize("flag, value", [("--notify-on", "Deployed,Sometimes"), ("--notify-severity", "loud"),
                                         ("--notify-timeout", "0"), ("--commit-status", "bitbucket"),
                                         ("--status-page-url", "status.example.com")])
def test_bad_values(capsys, flag, value):
    code, err = run(capsys, flag, value)
    assert code == 2 and f"argument {flag}" in err and len(err.strip().splitlines()) == 1


def test_notify_on_reads_any_case():
    from agent.cli.notify_flags import reasons

    assert reasons("deployed, DEGRADED") == frozenset({"Deployed", "Degraded"})


@pytest.mark.parametrize("text, expected", [("octo/web", "octo/web"), ("group/sub/project", "group/sub/project"),
                                            (" a.b/c_d-e.git ", "a.b/c_d-e"), ("o/.hidden", "o/.hidden")])
def test_a_repository_is_owner_and_name_or_a_gitlab_path(text, expected):
    assert notify_flags.repository(text) == expected


@pytest.mark.parametrize("text", ["nope", "", "/web", "octo/", "octo//web", "octo/-web", "octo/../web",
                                  "octo/w eb", "https://github.com/octo/web"])
def test_a_repository_that_is_no_path_is_refused(text):
    with pytest.raises(Exception, match="OWNER/NAME"):
        notify_flags.repository(text)
