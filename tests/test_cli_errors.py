"""Every bad value of every flag and of its environment variable ends the agent at start-up with
one line naming the flag (or variable), the value and what is allowed, and exit code 2; no output
anywhere holds a traceback. Nothing here reaches a cluster: the checks come first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import unprivileged

ROOT = Path(__file__).resolve().parent.parent

# (command, flag, environment variable, bad values)
BAD = [
    ("run", "--interval", "INTERVAL", ["-5", "0", "0.5", "86401", "inf", "nan", "soon", "500ms", "25h", "1d"]),
    ("run", "--jitter", "JITTER", ["-2", "3601", "x"]),
    ("sync", "--api-retry-seconds", "API_RETRY_SECONDS", ["-3", "601", "nan"]),
    ("sync", "--fetch-timeout", "FETCH_TIMEOUT", ["-1", "0", "3601", "61m", "1_0", "5 m"]),
    ("sync", "--concurrency", "CONCURRENCY", ["0", "65", "2.5", "many"]),
    ("run", "--kube-api-qps", "KUBE_API_QPS", ["0", "0.05", "1e-9", "-1", "10001", "inf", "fast"]),
    ("sync", "--kube-api-burst", "KUBE_API_BURST", ["0", "100001", "1.5", "x", "1_0", "5s"]),
    ("run", "--shutdown-grace", "SHUTDOWN_GRACE", ["-1", "3601", "x"]),
    ("run", "--lease-duration", "LEASE_DURATION", ["0", "2", "4.5", "3601", "x"]),
    ("run", "--http-addr", "HTTP_ADDR", ["8080", ":70000", "host:port", "", "bad_host:8080", "256.0.0.1:8080",
                                         "[::1]:8080", "-x:8080"]),
    ("run", "--lease-name", "LEASE_NAME", ["Lease", "a_b", ""]),
    ("run", "--lease-namespace", "LEASE_NAMESPACE", ["Kube", "a.b", ""]),
    ("run", "--identity", "IDENTITY", ["", "  "]),
    ("sync", "--log-level", "LOG_LEVEL", ["verbose", "trace", ""]),
    ("sync", "--log-format", "LOG_FORMAT", ["xml", ""]),
    ("sync", "--namespace", "NAMESPACE", ["Default", "team_web", "-x", "a" * 64, ""]),
    ("sync", "--source-id", "SOURCE_ID", ["has space", "-x", "a" * 64]),
    ("sync", "--path", "PATH", [""]),
    ("sync", "--ref", "REF", [""]),
    ("sync", "--cache-dir", "CACHE_DIR", [""]),
    ("sync", "--max-prune-share", "MAX_PRUNE_SHARE", ["-0.1", "1.5", "half"]),
    ("sync", "--git-username", "GIT_USERNAME", [""]),
    ("sync", "--git-token-file", "GIT_TOKEN_FILE", ["/nonexistent/token", "/"]),
    ("sync", "--ssh-key-file", "SSH_KEY_FILE", ["/nonexistent/id_ed25519"]),
    ("sync", "--known-hosts-file", "KNOWN_HOSTS_FILE", ["/nonexistent/known_hosts"]),
    ("sync", "--allowed-namespaces", "ALLOWED_NAMESPACES", [",", "Kube-System", "a b"]),
    ("sync", "--kubeconfig", "KUBECONFIG", ["", " "]),
    ("run", "--context", "CONTEXT", ["", " "]),
]
BOOLEANS = [("sync", "PRUNE"), ("sync", "ALLOW_EMPTY"), ("run", "LEADER_ELECT"), ("run", "WATCH")]


def run_agent(args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    """The agent as a user types it (a new process: about 2 s of imports on a busy machine)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_AGENT_")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "agent", *args], cwd=ROOT, env=full_env, capture_output=True,
                          text=True, timeout=60)


@pytest.fixture
def main(monkeypatch, capfd):
    """``agent.cli.main.main`` in this process, for the long tables (same parser, same checks, no
    import cost per case); returns a CompletedProcess-like result with stdout and stderr."""
    from agent.cli import main as cli

    def call(args: list[str], env: dict | None = None):
        for name in [k for k in os.environ if k.startswith("GITOPS_AGENT_")]:
            monkeypatch.delenv(name)
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        capfd.readouterr()
        code = cli.main(args)
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)
    return call


def assert_one_line(proc, *needles: str) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert "not allowed: must be" in lines[0] or "required" in lines[0]
    return lines[0]


CASES = [(cmd, flag, var, value) for cmd, flag, var, values in BAD for value in values]


@pytest.mark.parametrize("command, flag, variable, value", CASES,
                         ids=[f"{c[1]}={c[3][:10]!r}" for c in CASES])
def test_bad_flag_value_is_one_line_and_exit_2(main, command, flag, variable, value):
    proc = main([command, "--repo", "/nonexistent", f"{flag}={value}"])
    assert_one_line(proc, f"argument {flag}:", repr(value))


@pytest.mark.parametrize("command, flag, variable, value", CASES,
                         ids=[f"{c[2]}={c[3][:10]!r}" for c in CASES])
def test_bad_environment_value_is_one_line_and_exit_2(main, command, flag, variable, value):
    proc = main([command, "--repo", "/nonexistent"], env={f"GITOPS_AGENT_{variable}": value})
    assert_one_line(proc, f"GITOPS_AGENT_{variable}={value!r}")


def test_a_flag_wins_over_a_bad_variable(main):
    proc = main(["sync", "--repo", "/nonexistent", "--log-level", "INFO", "--kubeconfig", "/nonexistent/kc"],
                     env={"GITOPS_AGENT_LOG_LEVEL": "verbose"})
    assert "GITOPS_AGENT_LOG_LEVEL" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.returncode == 2 and "/nonexistent/kc" in proc.stderr  # got as far as the kubeconfig


@pytest.mark.parametrize("command, variable", BOOLEANS)
@pytest.mark.parametrize("value", ["maybe", "", "2"])
def test_bad_boolean_variable_is_one_line_and_exit_2(main, command, variable, value):
    proc = main([command, "--repo", "/nonexistent"], env={f"GITOPS_AGENT_{variable}": value})
    flag = "--" + variable.lower().replace("_", "-")
    line = assert_one_line(proc, f"GITOPS_AGENT_{variable}={value!r}", "boolean")
    assert line.startswith(f"python -m agent {command}: error: argument {flag}"), line


@pytest.mark.parametrize("variable", ["LEADER_ELECT", "WATCH", "RECONCILE_WAIT", "INTERVAL"])
def test_a_bad_variable_of_another_command_is_not_read(main, variable):
    """``sync`` has no --leader-elect, --watch, --wait or --interval: their variables (set for
    ``run`` in the same environment) are never read by it."""
    proc = main(["sync", "--repo", "/nonexistent", "--kubeconfig", "/nonexistent/kc"],
                env={f"GITOPS_AGENT_{variable}": "maybe"})
    assert proc.returncode == 2 and f"GITOPS_AGENT_{variable}" not in proc.stderr
    assert "/nonexistent/kc" in proc.stderr  # got as far as the kubeconfig


# Every GITOPS_AGENT_* variable of the README's tables: (variable, a bad value, command, flag as
# argparse names it). The commands that read a variable are spread over the rows; validate reads
# a few of sync's variables and gets rows of its own.
EVERY_VARIABLE = [
    ("COMMIT_STATUS", "bitbucket", "sync", "--commit-status"),
    ("COMMIT_STATUS_API_URL", "ftp://x", "run", "--commit-status-api-url"),
    ("COMMIT_STATUS_CONTEXT", "", "sync", "--commit-status-context"),
    ("COMMIT_STATUS_REPOSITORY", "nope", "sync", "--commit-status-repository"),
    ("COMMIT_STATUS_TOKEN_FILE", "/nonexistent/t", "run", "--commit-status-token-file"),
    ("NOTIFY_BATCH", "maybe", "sync", "--notify-batch"),
    ("NOTIFY_ON", "Bogus", "run", "--notify-on"), ("NOTIFY_SECRET_FILE", "/nonexistent/s", "sync", "--notify-secret-file"),
    ("NOTIFY_SEVERITY", "loud", "sync", "--notify-severity"), ("NOTIFY_TIMEOUT", "0", "run", "--notify-timeout"),
    ("NOTIFY_URL_FILE", "/nonexistent/u", "sync", "--notify-url-file"),
    ("STATUS_PAGE_URL", "javascript:alert(1)", "sync", "--status-page-url"),
    ("UI_ADDRESS", "127.0.0.1:99999", "run", "--ui-address"), ("UI_ANONYMOUS", "maybe", "run", "--ui-anonymous"),
    ("UI_TOKEN_FILE", "/nonexistent/t", "run", "--ui-token-file"),
    ("REPO", "", "sync", "--repo"), ("REF", "", "diff", "--ref"), ("PATH", "", "run", "--path"),
    ("NAMESPACE", "Default", "sync", "--namespace"), ("NAMESPACE", "a_b", "reconcile", "-n/--namespace"),
    ("NAMESPACE", "Bad", "validate", "--namespace"), ("SOURCE_ID", "-x", "diff", "--source-id"),
    ("PRUNE", "maybe", "sync", "--prune/--no-prune"), ("PRUNE", "", "run", "--prune/--no-prune"),
    ("SUBMODULES", "2", "diff", "--submodules/--no-submodules"), ("ALLOW_EMPTY", "y", "sync", "--allow-empty"),
    ("MAX_PRUNE_SHARE", "1.5", "run", "--max-prune-share"), ("CACHE_DIR", "", "sync", "--cache-dir"),
    ("CACHE_DIR", "", "validate", "--cache-dir"), ("FETCH_TIMEOUT", "0", "diff", "--fetch-timeout"),
    ("FETCH_TIMEOUT", "soon", "validate", "--fetch-timeout"), ("API_RETRY_SECONDS", "x", "sync", "--api-retry-seconds"),
    ("CONCURRENCY", "65", "run", "--concurrency"), ("KUBE_API_QPS", "0", "diff", "--kube-api-qps"),
    ("KUBE_API_BURST", "1.5", "sync", "--kube-api-burst"), ("ALLOWED_NAMESPACES", ",", "run", "--allowed-namespaces"),
    ("GIT_TOKEN_FILE", "/nonexistent/t", "sync", "--git-token-file"),
    ("GIT_TOKEN_FILE", "/nonexistent/t", "validate", "--git-token-file"), ("GIT_USERNAME", "", "diff", "--git-username"),
    ("GIT_USERNAME", " ", "validate", "--git-username"), ("SSH_KEY_FILE", "/nonexistent/k", "run", "--ssh-key-file"),
    ("SSH_KEY_FILE", "/", "validate", "--ssh-key-file"), ("KNOWN_HOSTS_FILE", "/nonexistent/h", "sync", "--known-hosts-file"),
    ("KNOWN_HOSTS_FILE", "/nonexistent/h", "validate", "--known-hosts-file"),
    ("OUTPUT", "yaml", "sync", "-o/--output"), ("OUTPUT", "yaml", "diff", "-o/--output"),
    ("OUTPUT", "xml", "validate", "-o/--output"), ("LOG_LEVEL", "verbose", "run", "--log-level"),
    ("LOG_LEVEL", "verbose", "validate", "--log-level"), ("LOG_FORMAT", "xml", "sync", "--log-format"),
    ("LOG_FORMAT", "xml", "validate", "--log-format"), ("INTERVAL", "0", "run", "--interval"),
    ("JITTER", "-1", "run", "--jitter"), ("RELIST_INTERVAL", "5", "run", "--relist-interval"),
    ("HTTP_ADDR", "8080", "run", "--http-addr"),
    ("LEADER_ELECT", "maybe", "run", "--leader-elect/--no-leader-elect"), ("LEASE_NAME", "Lease", "run", "--lease-name"),
    ("LEASE_NAMESPACE", "a.b", "run", "--lease-namespace"), ("LEASE_DURATION", "2", "run", "--lease-duration"),
    ("IDENTITY", " ", "run", "--identity"), ("WATCH", "of", "run", "--watch/--no-watch"),
    ("SHUTDOWN_GRACE", "-1", "run", "--shutdown-grace"), ("STUCK_PASS_AFTER", "0", "run", "--stuck-pass-after"),
    ("DEFAULT_SECURITY_PROFILE", "strict", "sync", "--default-security-profile"),
    ("DEFAULT_SECURITY_PROFILE", "", "run", "--default-security-profile"),
    ("WEBHOOK_SECRET_FILE", "/nonexistent/s", "run", "--webhook-secret-file"),
    ("WEBHOOK_SECRET", " ", "run", "--webhook-secret-file"), ("MIN_RETRY_DELAY", "0", "run", "--min-retry-delay"),
    ("MAX_RETRY_DELAY", "86401", "run", "--max-retry-delay"), ("RECONCILE_WAIT", "maybe", "reconcile", "--wait"),
    ("WAIT", "soon", "sync", "--wait"),
    ("RECONCILE_TIMEOUT", "0", "reconcile", "--timeout"), ("KUBECONFIG", "", "diff", "--kubeconfig"),
    ("CONTEXT", "", "sync", "--context"), ("CONTEXT", "", "reconcile", "--context"),
    ("GIT_TOKEN", "", "sync", "--git-token-file"), ("GIT_TOKEN", " \n", "run", "--git-token-file"),
    ("ALLOW_INSECURE_HTTP", "maybe", "sync", "--allow-insecure-http"), ("SUBMODULE_HOSTS", ",", "sync", "--submodule-hosts"),
    ("ADOPT_NAMESPACES", ",", "sync", "--adopt-namespaces"),
    ("ALLOWED_SERVICE_ACCOUNTS", ",", "run", "--allowed-service-accounts"),
    ("ALLOW_INGRESS_SNIPPETS", "maybe", "diff", "--allow-ingress-snippets"),
    ("TENANT_SERVICE_ACCOUNT", "Bad_Name", "sync", "--tenant-service-account"), ("PROBE_ADDR", "8080", "run", "--probe-addr"),
]
NOT_CHECKED_AT_START: dict[str, str] = {}


def test_the_table_holds_every_variable_of_the_readme():
    readme = (ROOT / "docs" / "reference" / "flags.md").read_text()
    named = set(re.findall(r"GITOPS_AGENT_([A-Z_]*[A-Z])\b", "\n".join(
        line for line in readme.splitlines() if line.startswith("|"))))
    if "GITOPS_AGENT_LEASE_*" in readme:  # the lease row names its three variables at once
        named |= {"LEASE_NAME", "LEASE_NAMESPACE", "LEASE_DURATION"}
    assert named == {row[0] for row in EVERY_VARIABLE} | set(NOT_CHECKED_AT_START)


@pytest.mark.parametrize("variable, value, command, flag", EVERY_VARIABLE,
                         ids=[f"{r[2]}-{r[0]}={r[1]!r}" for r in EVERY_VARIABLE])
def test_every_variable_with_a_bad_value_reads_as_the_readme_documents(variable, value, command, flag):
    """README: ``gitops-agent run: error: argument --interval: GITOPS_AGENT_INTERVAL='0' is not
    allowed: must be ... (see gitops-agent run --help)``, for every variable, as a user runs it."""
    args = {"validate": ["--path", "."], "reconcile": ["web", "--kubeconfig", "/nonexistent/kc"]}.get(
        command, [] if variable == "REPO" else ["--repo", "/nonexistent"])
    proc = run_agent([command, *args], {f"GITOPS_AGENT_{variable}": value, "HOME": "/nonexistent"})
    line = assert_one_line(proc)
    prog = f"python -m agent {command}"
    assert re.fullmatch(rf"{re.escape(prog)}: error: argument {re.escape(flag)}: "
                        rf"{re.escape(f'GITOPS_AGENT_{variable}={value!r}')} is not allowed: must (be|not) .+ "
                        rf"\(see {re.escape(prog)} --help\)", line), line


def test_an_http_addr_whose_host_does_not_resolve_is_refused_before_the_kubeconfig(main, monkeypatch):
    """The whole --http-addr is checked with the other flags: a host name that does not resolve
    is one line and exit 2 before the kubeconfig is read (it used to fail at bind, after it)."""
    import socket

    def no_such_host(host, *args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    proc = main(["run", "--repo", "/nonexistent", "--kubeconfig", "/nonexistent/kc", "--http-addr", "nosuch.invalid:8080"])
    line = assert_one_line(proc, "argument --http-addr: 'nosuch.invalid:8080'", "does not resolve to an IPv4 address")
    assert "/nonexistent/kc" not in line


@pytest.mark.parametrize("value, problem", [
    ("8080", "there is no port: the ':' before it is missing (did you mean ':8080'?)"),
    (":70000", "the port 70000 is out of range (0 to 65535)"),
    ("bad_host:8080", "the host 'bad_host' is not a host name"),
])
def test_a_bad_http_addr_says_what_is_wrong_with_it(main, value, problem):
    for proc in (main(["run", "--repo", "/nonexistent", "--http-addr", value]),
                 main(["run", "--repo", "/nonexistent"], env={"GITOPS_AGENT_HTTP_ADDR": value})):
        line = assert_one_line(proc, "must be HOST:PORT with HOST empty (every interface), an IPv4 address or a host "
                                     f"name, and a port from 0 to 65535 (e.g. :8080 or 127.0.0.1:8080); {problem}")
        assert line.endswith(" (see python -m agent run --help)")


@pytest.mark.parametrize("how", ["flag", "variable"])
@pytest.mark.parametrize("case, problem", [
    ("in use", "the address is already in use (another process listens on it)"),
    ("foreign", "10.255.255.1 is not an address of this machine (give one of its addresses, or none for every "
                "interface)"),
])
def test_an_http_addr_that_cannot_be_bound_is_one_line_without_the_os_error(main, tmp_path, how, case, problem):
    """Binding fails after the flags were checked (the port taken meanwhile, an address of
    another machine): one line saying why in words, exit 2; no errno, no OS message."""
    import socket

    (tmp_path / "kc.yaml").write_text(kubeconfig_text())
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        addr = f"127.0.0.1:{taken.getsockname()[1]}" if case == "in use" else "10.255.255.1:8080"
        args = ["run", "--repo", "/nonexistent", "--kubeconfig", str(tmp_path / "kc.yaml"),
                "--cache-dir", str(tmp_path / "cache")]
        proc = (main([*args, "--http-addr", addr]) if how == "flag"
                else main(args, env={"GITOPS_AGENT_HTTP_ADDR": addr}))
    given = "--http-addr" if how == "flag" else "GITOPS_AGENT_HTTP_ADDR"
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"error: cannot listen on {addr} ({given}): {problem}\n"


def test_a_port_below_1024_that_may_not_be_bound_says_it_needs_privileges():
    import errno

    from agent.server.endpoints import listen_problem

    assert listen_problem(":80", PermissionError(errno.EACCES, "Permission denied")) == (
        "this user may not listen on port 80: ports below 1024 need root or the CAP_NET_BIND_SERVICE capability")
    assert listen_problem(":8080", OSError(errno.ENOBUFS, "No buffer space available")) == "no buffer space available"


def test_missing_repo_is_one_line():
    proc = run_agent(["sync"])
    assert_one_line(proc, "--repo")


def test_unreadable_token_file_names_the_flag(main, tmp_path):
    token = tmp_path / "token"
    proc = main(["sync", "--repo", "/nonexistent", "--git-token-file", str(token)])
    assert_one_line(proc, "--git-token-file", str(token), "No such file or directory")


@pytest.mark.parametrize("content, why", [("", "it is empty"), (" \n\t\n", "it is empty"),
                                          ("abc\ndef\n", "more than one line"), ("ab\r\ncd", "more than one line")])
def test_a_token_file_without_one_token_names_the_flag(main, tmp_path, content, why):
    token = tmp_path / "token"
    token.write_text(content)
    proc = main(["sync", "--repo", "/nonexistent", "--git-token-file", str(token)])
    assert_one_line(proc, "--git-token-file", "must be a file holding one token on one line", why)


@pytest.mark.parametrize("value, shown, why", [("", "GITOPS_AGENT_GIT_TOKEN=''", "it is empty"),
                                               (" \t\n", "GITOPS_AGENT_GIT_TOKEN=' \\t\\n'", "it is empty"),
                                               ("s3cret\nmore", "GITOPS_AGENT_GIT_TOKEN (its value is not shown)",
                                                "it holds more than one line")])
def test_a_token_variable_without_one_token_is_refused_as_the_file_is(main, value, shown, why):
    """An empty GITOPS_AGENT_GIT_TOKEN used to mean an anonymous fetch; a line break inside, a
    broken header. Refused as an empty GITOPS_AGENT_WEBHOOK_SECRET is, a secret never shown."""
    proc = main(["sync", "--repo", "/nonexistent"], env={"GITOPS_AGENT_GIT_TOKEN": value})
    line = assert_one_line(proc, f"argument --git-token-file: {shown} is not allowed: must be one token on one "
                                 f"line, or unset for none ({why})")
    assert "s3cret" not in line


def test_a_token_variable_ending_in_a_line_break_is_the_token_without_it(main):
    """A Secret made from a file ends with the file's newline: used without it, as the file's."""
    proc = main(["sync", "--repo", "/nonexistent", "--kubeconfig", "/nonexistent/kc"],
                env={"GITOPS_AGENT_GIT_TOKEN": "s3cret\n"})
    assert proc.returncode == 2 and "--git-token-file" not in proc.stderr
    assert "/nonexistent/kc" in proc.stderr  # got as far as the kubeconfig


def test_a_password_with_blanks_is_a_token_on_one_line(main, tmp_path):
    token = tmp_path / "token"
    token.write_text("pass word\n")
    proc = main(["sync", "--repo", "/nonexistent", "--git-token-file", str(token)])
    assert "--git-token-file" not in proc.stderr  # it fails further on, at the repository


@pytest.mark.parametrize("command", ["sync", "run", "validate"])
@pytest.mark.parametrize("case, why", [
    ("dangling", "(it is a symlink to 'TMP/gone', which does not exist)"),
    ("dangling/sub", "('TMP/dangling' is a symlink to 'TMP/gone', which does not exist)"),
    ("read-only", "(it cannot be written by this user: Permission denied)"),
    ("read-only/sub", "('TMP/read-only' cannot be written (to create the cache directory in it) by this user: "
                      "Permission denied)"),
    ("write-only", "(it cannot be read by this user: Permission denied)"),
])
def test_a_cache_dir_that_cannot_be_used_is_one_line_before_anything_runs(tmp_path, command, case, why):
    """A dangling symlink or a directory this user may not write (or read) is refused up front,
    naming the directory and what it must be: never a raw OS error from the lock or Git, and
    before the kubeconfig is read or anything is fetched; nothing in it is touched."""
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    for name, mode in (("read-only", 0o555), ("write-only", 0o333)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "kept").write_text("x")
        (tmp_path / name).chmod(mode)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITOPS_AGENT_", "KUBE"))}
    args = ["--repo", str(ROOT), "--cache-dir", str(tmp_path / case)]
    if command != "validate":
        args += ["--kubeconfig", "/nonexistent/kc"]
    try:
        proc = subprocess.run(unprivileged([sys.executable, "-m", "agent", command, *args]), cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
    finally:
        for name in ("read-only", "write-only"):
            (tmp_path / name).chmod(0o755)
    line = assert_one_line(proc, f"python -m agent {command}: error: argument --cache-dir: {str(tmp_path / case)!r} "
                                 "is not allowed: must be a directory this user can read and write, or a path where "
                                 "one can be created " + why.replace("TMP", str(tmp_path)))
    assert "/nonexistent/kc" not in line
    assert not (tmp_path / "gone").exists()
    assert [p.name for p in (tmp_path / "read-only").iterdir()] == ["kept"]
    assert [p.name for p in (tmp_path / "write-only").iterdir()] == ["kept"]


@pytest.mark.parametrize("command", ["sync", "run", "diff", "validate"])
@pytest.mark.parametrize("how", ["flag", "variable"])
@pytest.mark.parametrize("userinfo", ["alice-or-a-token", ":alice-or-a-token"])
def test_a_user_in_the_repo_url_and_another_git_username_are_refused(main, command, how, userinfo):
    """``https://alice@host/...`` (or ``https://:password@host/...``, whose user is git) and
    ``--git-username bob``: one of them would silently win; refused in one line, without showing
    the URL's user-info (it can be a token)."""
    args = [command, "--repo", f"https://{userinfo}@git.example/apps.git"]
    proc = main([*args, "--git-username", "bob"] if how == "flag" else args,
                env={} if how == "flag" else {"GITOPS_AGENT_GIT_USERNAME": "bob"})
    given = "'bob'" if how == "flag" else "GITOPS_AGENT_GIT_USERNAME='bob'"
    line = assert_one_line(proc, f"python -m agent {command}: error: argument --git-username: {given} is not allowed: "
                                 "must be the user written in --repo's URL when both are given (they differ; the URL's "
                                 "is not shown): give the user in one place")
    assert "alice-or-a-token" not in line


@pytest.mark.parametrize("how", ["file", "variable"])
def test_a_password_in_the_repo_url_and_another_token_are_refused_without_showing_either(main, tmp_path, how):
    (tmp_path / "token").write_text("file-token-0053\n")
    args = ["sync", "--repo", "https://git:url-token-0053@git.example/apps.git"]
    if how == "file":
        proc = main([*args, "--git-token-file", str(tmp_path / "token")])
    else:
        proc = main(args, env={"GITOPS_AGENT_GIT_TOKEN": "env-token-0053"})
    given = repr(str(tmp_path / "token")) if how == "file" else "GITOPS_AGENT_GIT_TOKEN"
    line = assert_one_line(proc, f"argument --git-token-file: {given} is not allowed: must be the same token as the "
                                 "password written in --repo's URL when both are given (they differ; neither is shown)")
    assert "0053" not in line.replace(str(tmp_path), "")


@pytest.mark.parametrize("args", [["--git-username", "alice"], ["--git-username", "bob", "--repo", "ssh://alice@h/r"],
                                  ["--git-username", "bob", "--repo", "https://h/r"]])
def test_a_git_username_that_agrees_with_the_repo_url_or_an_ssh_user_is_accepted(main, args):
    repo = ["--repo", "https://alice@git.invalid/apps.git"] if "--repo" not in args else []
    proc = main(["sync", *repo, *args, "--kubeconfig", "/nonexistent/kc"])
    assert proc.returncode == 2 and "--git-username" not in proc.stderr
    assert "/nonexistent/kc" in proc.stderr  # got as far as the kubeconfig


def test_version_and_usage_name_the_program():
    proc = run_agent(["--version"])
    assert proc.returncode == 0 and proc.stdout.startswith("python -m agent ")
    console = Path(sys.executable).parent / "gitops-agent"
    if console.exists():
        out = subprocess.run([str(console), "--version"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.startswith("gitops-agent ")
        usage = subprocess.run([str(console), "sync", "--help"], capture_output=True, text=True, timeout=60)
        assert usage.stdout.startswith("usage: gitops-agent sync")


def test_every_default_in_help_is_written_the_same_way(main):
    for command in ("sync", "run"):
        text = " ".join(main([command, "--help"]).stdout.split())
        assert "(default " not in text, text  # always "(default: X)"


@pytest.mark.parametrize("args, env, needle", [
    (["run", "--repo", "/x", "--interval", "-5"], {}, "argument --interval: '-5'"),
    (["sync", "--repo", "/x", "--log-level", "verbose"], {}, "argument --log-level: 'verbose'"),
    (["run", "--repo", "/x"], {"GITOPS_AGENT_INTERVAL": "0"}, "GITOPS_AGENT_INTERVAL='0'"),
    (["sync", "--repo", "/x"], {"GITOPS_AGENT_PRUNE": "maybe"}, "GITOPS_AGENT_PRUNE='maybe'"),
    (["sync", "--repo", "/x", "--git-token-file", "/nonexistent/t"], {}, "argument --git-token-file"),
])
def test_as_a_user_types_it(args, env, needle):
    assert_one_line(run_agent(args, env), needle)


def kubeconfig_text(server: str = "https://127.0.0.1:9", user: str = "{token: t}") -> str:
    return (f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
            f"users: [{{name: u, user: {user}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}, "
            "{name: prod, context: {cluster: c, user: u}}]\ncurrent-context: x\n")


EXEC = "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: %s}}"
KUBECONFIGS = {  # a file name in the arguments below -> what it holds
    "KC": kubeconfig_text(),
    "NO_SCHEME": kubeconfig_text(server="127.0.0.1:6443"),
    "NO_HOST": kubeconfig_text(server="https://:6443"),
    "EXEC_MISSING": kubeconfig_text(user=EXEC % "gitops-agent-no-such-plugin"),
    "EXEC_RELATIVE": kubeconfig_text(user=EXEC % "./bin/no-such-plugin"),
    "EXEC_FAILS": kubeconfig_text(user=EXEC % "'false'"),
    "NO_CURRENT": kubeconfig_text().replace("current-context: x\n", ""),
    "NOT_UTF8": b"\x00\x01\xff",
    "PORT": kubeconfig_text(server="https://127.0.0.1:99999"),
    "GHOST_CLUSTER": kubeconfig_text().replace("{cluster: c, user: u}}, {name: prod", "{cluster: ghost, user: u}}, {name: prod"),
    "GHOST_USER": kubeconfig_text().replace("users: [{name: u, user: {token: t}}]", "users: []"),
    "ONLY_USERNAME": kubeconfig_text(user="{username: bob}"),
    "TOKEN_FILE": kubeconfig_text(user="{tokenFile: /nonexistent/tok}"),
    "CA_DATA": kubeconfig_text().replace("server: 'https://127.0.0.1:9'", "server: 'https://127.0.0.1:9', "
                                         "certificate-authority-data: '!!'"),
    "SOCKS": kubeconfig_text().replace("server: 'https://127.0.0.1:9'", "server: 'https://127.0.0.1:9', "
                                       "proxy-url: 'socks5://127.0.0.1:1'"),
    "NOT_A_URL_PROXY": kubeconfig_text().replace("server: 'https://127.0.0.1:9'", "server: 'https://127.0.0.1:9', "
                                                 "proxy-url: notaurl"),
}


@pytest.mark.parametrize("args, needle", [
    (["--kubeconfig", "/etc/passwd"], "from /etc/passwd: not a kubeconfig file"),
    (["--kubeconfig", "/nonexistent/kubeconfig"], "the file does not exist"),
    (["--kubeconfig", "/"], "from /: cannot be read: Is a directory"),
    ([], "give --kubeconfig FILE"),
    (["--kubeconfig", "KC", "--context", "nope"], "--context 'nope' is not one of its contexts (x, prod)"),
    (["--kubeconfig", "NO_CURRENT"], "it names no current-context: give --context NAME (its contexts: x, prod)"),
    (["--kubeconfig", "NO_SCHEME"], "cluster 'c' has server '127.0.0.1:6443', which has no scheme: must be a URL "
                                    "starting with https:// (or http://), e.g. 'https://127.0.0.1:6443'"),
    (["--kubeconfig", "NO_HOST"], "cluster 'c' has server 'https://:6443', which is not an https:// or http:// URL"),
    (["--kubeconfig", "EXEC_MISSING"], "user 'u': its exec credential plugin command 'gitops-agent-no-such-plugin' "
                                       "was not found on PATH"),
    (["--kubeconfig", "EXEC_RELATIVE"], "user 'u': its exec credential plugin command './bin/no-such-plugin' was not "
                                        "found ('TMP/bin/no-such-plugin' is not a file)"),
    (["--kubeconfig", "EXEC_FAILS"], "user 'u': its exec credential plugin 'false' failed (exec: process returned 1); "
                                     "the agent does not connect without the credentials it should send"),
    (["--kubeconfig", "NOT_UTF8"], "from TMP/NOT_UTF8.yaml: not UTF-8 text (byte 0xff at offset 2): must be a "
                                   "kubeconfig file (YAML with clusters, users and contexts)"),
    (["--kubeconfig", "PORT"], "cluster 'c' has server 'https://127.0.0.1:99999', whose port 99999 is out of range: "
                               "must be from 1 to 65535"),
    (["--kubeconfig", "GHOST_CLUSTER"], "context 'x' names cluster 'ghost', which is not one of its clusters (c)"),
    (["--kubeconfig", "GHOST_USER"], "context 'x' names user 'u', which is not one of its users (it has none); the "
                                     "agent does not connect without its credentials"),
    (["--kubeconfig", "ONLY_USERNAME"], "user 'u' has a username but no password: basic authentication sends both"),
    (["--kubeconfig", "TOKEN_FILE"], "user 'u': its tokenFile '/nonexistent/tok' cannot be read: the file does not "
                                     "exist"),
    (["--kubeconfig", "CA_DATA"], "cluster 'c': its certificate-authority-data is not base64"),
    (["--kubeconfig", "SOCKS"], "cluster 'c' has proxy-url 'socks5://127.0.0.1:1', a SOCKS proxy, which the agent "
                                "does not support (urllib3 needs PySocks for it, which is not installed)"),
    (["--kubeconfig", "NOT_A_URL_PROXY"], "cluster 'c' has proxy-url 'notaurl', which has no scheme: must be an "
                                          "http:// or https:// URL"),
])
def test_a_bad_or_missing_kubeconfig_is_one_line(main, tmp_path, monkeypatch, args, needle):
    """Each way a kubeconfig can be wrong is one line naming it, before anything is fetched or
    sent: no FutureWarning for a server without a scheme (never guessed as plain HTTP), no
    request without the credentials an exec plugin should have given (never fail open)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    for name, text in KUBECONFIGS.items():
        (tmp_path / f"{name}.yaml").write_bytes(text if isinstance(text, bytes) else text.encode())
    args = [str(tmp_path / f"{a}.yaml") if a in KUBECONFIGS else a for a in args]
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    proc = main(["sync", "--repo", str(repo), "--cache-dir", str(tmp_path / "cache"), *args])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: loading the cluster configuration"), proc.stderr
    assert needle.replace("TMP", str(tmp_path)) in lines[0]
    assert "NoConfiguration" not in lines[0] and "Invalid kube-config" not in lines[0]  # our words, no class names
    assert not (tmp_path / "cache").exists()  # refused before the source was fetched


@pytest.mark.parametrize("command", ["sync", "run", "reconcile"])
def test_an_unknown_context_of_the_kubeconfig_variable_lists_the_contexts_it_has(main, tmp_path, monkeypatch, command):
    kubeconfig = tmp_path / "kc.yaml"
    kubeconfig.write_text(kubeconfig_text())
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing.yaml'}:{kubeconfig}")
    args = ["web"] if command == "reconcile" else ["--repo", "/nonexistent", "--cache-dir", str(tmp_path / "cache")]
    proc = main([command, *args], env={"GITOPS_AGENT_CONTEXT": "staging"})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("error: loading the cluster configuration: GITOPS_AGENT_CONTEXT='staging' "
                           "is not one of its contexts (x, prod)\n")


@pytest.mark.parametrize("command", ["sync", "reconcile"])
def test_an_unreadable_kubeconfig_says_it_cannot_be_read_and_why(tmp_path, command):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_text())
    kubeconfig.chmod(0)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITOPS_AGENT_", "KUBE"))}
    args = ["--repo", "/nonexistent", "--cache-dir", str(tmp_path / "cache")] if command == "sync" else ["web"]
    proc = subprocess.run(unprivileged([sys.executable, "-m", "agent", command, *args, "--kubeconfig",
                                        str(kubeconfig)]), cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr == (f"error: loading the cluster configuration from {kubeconfig}: cannot be read: "
                           "Permission denied\n")


@pytest.mark.parametrize("command", ["sync", "reconcile"])
def test_a_kubeconfig_in_the_kubeconfig_variable_that_is_not_utf8_is_named(main, tmp_path, monkeypatch, command):
    (tmp_path / "kc.yaml").write_text(kubeconfig_text())
    (tmp_path / "binary").write_bytes(b"\x00\x01\xff")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'binary'}:{tmp_path / 'kc.yaml'}")
    args = ["web"] if command == "reconcile" else ["--repo", "/nonexistent", "--cache-dir", str(tmp_path / "cache")]
    proc = main([command, *args])
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"error: loading the cluster configuration: {tmp_path / 'binary'} is not UTF-8 text (byte "
                           "0xff at offset 2): must be a kubeconfig file (YAML with clusters, users and contexts)\n")


def test_a_kubeconfig_in_the_kubeconfig_variable_that_cannot_be_read_is_named(tmp_path):
    """$KUBECONFIG lists files: a missing one is skipped (as kubectl does), one that exists but
    cannot be read is named with the reason, never taken as "no configuration"."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_text())
    kubeconfig.chmod(0)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITOPS_AGENT_", "KUBE"))}
    env["KUBECONFIG"] = f"{tmp_path / 'missing'}:{kubeconfig}"
    proc = subprocess.run(unprivileged([sys.executable, "-m", "agent", "sync", "--repo", "/nonexistent", "--cache-dir",
                                        str(tmp_path / "cache")]), cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == (f"error: loading the cluster configuration: {kubeconfig} cannot be read: "
                           "Permission denied\n")


@pytest.mark.parametrize("command", ["sync", "diff", "run", "validate"])
@pytest.mark.parametrize("repo", ["ftp://host/r.git", "HTTPX://host/r", "s3://bucket/r", "/srv/a\nb", "https://h/r\t.git"])
def test_a_repo_url_git_cannot_read_is_refused_before_git_runs(main, command, repo):
    """Git's transports are local paths, file://, http(s)://, ssh:// (and its aliases), git://
    and scp-like user@host:path; any other scheme is one line naming them, as a flag or a variable."""
    for args, env, shown in [(["--repo", repo], {}, repr(repo)),
                             ([], {"GITOPS_AGENT_REPO": repo}, f"GITOPS_AGENT_REPO={repo!r}")]:
        if command == "validate" and env:
            continue  # validate reads no GITOPS_AGENT_REPO: --repo is optional there
        proc = main([command, *args], env=env)
        line = assert_one_line(proc, "argument --repo:", shown, "file, https, http, ssh, git+ssh, ssh+git, git")
        assert "scp-like user@host:path" in line


@pytest.mark.parametrize("repo", ["HTTPS://127.0.0.1:1/r.git", "git+ssh://127.0.0.1:1/r.git", "git@127.0.0.1:r.git"])
def test_every_transport_git_reads_passes_the_repo_check(main, repo):
    proc = main(["validate", "--repo", repo, "--fetch-timeout", "5"])
    assert "argument --repo" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, prog", [
    (["diff", "--repo", "/r", "--exit-code"], "diff"), (["sync", "--repo", "/r", "extra"], "sync"),
    (["run", "--repo", "/r", "--once"], "run"), (["reconcile", "web", "--bogus"], "reconcile"),
])
def test_an_unknown_flag_after_a_command_is_that_commands_error(main, args, prog):
    proc = main(args)
    assert proc.returncode == 2 and proc.stdout == ""
    unknown = args[-1]
    assert proc.stderr.splitlines() == [f"{flags_prog()} {prog}: error: unrecognized arguments: {unknown} "
                                        f"(see {flags_prog()} {prog} --help)"]


def flags_prog() -> str:
    from agent.cli import flags

    return flags.prog_name()


@pytest.mark.parametrize("args, shown, hint", [
    (["--bogus", "sync"], "--bogus", None),  # sync's missing --repo is not the error
    (["--bogus=1", "run", "--repo", "/r"], "--bogus=1", None),
    (["-x", "diff"], "-x", None),
    (["--repo", "/r", "sync"], "--repo", "sync --repo"),
    (["--dry-run", "sync", "--repo", "/r"], "--dry-run", "sync --dry-run"),
])
def test_an_unknown_flag_before_the_command_is_named_before_anything_else(main, args, shown, hint):
    proc = main(args)
    assert proc.returncode == 2 and proc.stdout == ""
    tail = f"(a command's flags go after it: {flags_prog()} {hint} ...)" if hint else f"(see {flags_prog()} --help)"
    assert proc.stderr.splitlines() == [f"{flags_prog()}: error: unrecognized arguments: {shown} {tail}"]


@pytest.mark.parametrize("args", [["--version"], ["--vers"]])
def test_the_top_level_flags_and_their_abbreviations_still_work(main, args):
    proc = main(args)
    assert proc.returncode == 0 and proc.stdout.startswith(flags_prog())
