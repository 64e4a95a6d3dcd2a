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


@pytest.mark.parametrize("content, why", [
    ("http://[::1:18099/hook/secret-token-3", "its host is not valid"),
    ("http://127.0.0.1:abc/hook/secret-token-3", "its port is not a number"),
    ("http://127.0.0.1:99999/hook/secret-token-3", "its port is not a number"),
    ("http://127.0.0.1:8080/hook/secret token-3", "it holds a blank"),
    ("http:///hook/secret-token-3", "it has no host")])
def test_a_url_file_whose_url_cannot_work_is_one_line(tmp_path, capsys, content, why):
    (tmp_path / "url").write_text(content + "\n")
    code, err = run(capsys, "--notify-url-file", str(tmp_path / "url"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert why in err and "one http:// or https:// URL on one line" in err and "secret" not in err


@pytest.mark.parametrize("flag", ["--commit-status-api-url", "--status-page-url"])
@pytest.mark.parametrize("value", ["http://[::1:18099/x", "http://h:abc/", "http://h:99999/", "http://u:p@h/"])
def test_a_bad_url_flag_is_one_clear_line(capsys, flag, value):
    code, err = run(capsys, flag, value)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"argument {flag}" in err and "must be an http:// or https:// URL (" in err and "invalid" not in err


def test_a_huge_or_endless_file_is_refused_in_one_line(tmp_path, capsys):
    code, err = run(capsys, "--notify-url-file", "/dev/zero")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "holds more than 64 KiB" in err
    (tmp_path / "key").write_text("k" * (64 * 1024 + 1))
    (tmp_path / "url").write_text("http://127.0.0.1:9/hook\n")
    code, err = run(capsys, "--notify-url-file", str(tmp_path / "url"), "--notify-secret-file", str(tmp_path / "key"))
    assert code == 2 and "must be a file holding one signing key on one line (it holds more than 64 KiB)" in err


def test_an_empty_url_file_names_what_it_should_hold(tmp_path, capsys):
    (tmp_path / "url").write_text("\n")
    code, err = run(capsys, "--notify-url-file", str(tmp_path / "url"))
    assert code == 2 and "must be a file holding one http:// or https:// URL on one line (it is empty)" in err


@pytest.mark.parametrize("kind", ["github", "gitea"])
def test_github_and_gitea_take_only_owner_and_name(tmp_path, capsys, kind):
    (tmp_path / "t").write_text("tok\n")
    code, err = run(capsys, "--commit-status", kind, "--commit-status-token-file", str(tmp_path / "t"),
                    "--commit-status-api-url", "https://git.example.com/api/v1",
                    "--commit-status-repository", "team/apps/extra")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"'team/apps/extra' is not allowed with --commit-status {kind}: must be OWNER/NAME" in err


def test_each_segment_of_the_repository_is_quoted_in_the_api_url():
    from agent.notify import commitstatus

    host = commitstatus.GitHub("https://api.github.com", "o.w/n%a#me", "t")
    assert host.post_url("ab") == "https://api.github.com/repos/o.w/n%25a%23me/statuses/ab"
    assert host.list_url("ab") == "https://api.github.com/repos/o.w/n%25a%23me/commits/ab/statuses"


def test_reasons_that_are_no_errors_with_severity_error_are_refused(tmp_path, capsys):
    (tmp_path / "url").write_text("http://127.0.0.1:9/hook\n")
    code, err = run(capsys, "--notify-url-file", str(tmp_path / "url"), "--notify-on", "Deployed,Ready",
                    "--notify-severity", "error")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "'Deployed,Ready' is not allowed with --notify-severity error: it would never send anything" in err
    assert "Degraded, Stalled, ApplyFailed" in err


def test_the_agents_pod_comes_from_the_downward_api_variables():
    assert notify_flags.agent_pod({"POD_NAMESPACE": "ops", "POD_NAME": "gitops-agent-7c9", "POD_UID": "u-1"}) == (
        "ops", "gitops-agent-7c9", "u-1")
    assert notify_flags.agent_pod({"POD_NAMESPACE": "ops", "POD_NAME": "gitops-agent-7c9"}) == (
        "ops", "gitops-agent-7c9", "")
    assert notify_flags.agent_pod({"POD_NAMESPACE": "ops"}) is None  # the lease's variable alone: not in a Pod
    assert notify_flags.agent_pod({}) is None
