"""Every bad value of every flag and of its environment variable ends the agent at start-up with
one line naming the flag (or variable), the value and what is allowed, and exit code 2; no output
anywhere holds a traceback. Nothing here reaches a cluster: the checks come first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# (command, flag, environment variable, bad values)
BAD = [
    ("run", "--interval", "INTERVAL", ["-5", "0", "0.5", "86401", "inf", "nan", "soon"]),
    ("run", "--jitter", "JITTER", ["-2", "3601", "x"]),
    ("sync", "--api-retry-seconds", "API_RETRY_SECONDS", ["-3", "601", "nan"]),
    ("sync", "--fetch-timeout", "FETCH_TIMEOUT", ["-1", "0", "3601", "1m"]),
    ("sync", "--concurrency", "CONCURRENCY", ["0", "65", "2.5", "many"]),
    ("run", "--kube-api-qps", "KUBE_API_QPS", ["0", "0.05", "1e-9", "-1", "10001", "inf", "fast"]),
    ("sync", "--kube-api-burst", "KUBE_API_BURST", ["0", "100001", "1.5", "x"]),
    ("run", "--shutdown-grace", "SHUTDOWN_GRACE", ["-1", "3601", "x"]),
    ("run", "--lease-duration", "LEASE_DURATION", ["0", "2", "4.5", "3601", "x"]),
    ("run", "--http-addr", "HTTP_ADDR", ["8080", ":70000", "host:port", ""]),
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
    """``agent.cli.main`` in this process, for the long tables (same parser, same checks, no
    import cost per case); returns a CompletedProcess-like result with stdout and stderr."""
    from agent import cli

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
    assert_one_line(proc, f"GITOPS_AGENT_{variable}={value!r}", "boolean")


def test_missing_repo_is_one_line():
    proc = run_agent(["sync"])
    assert_one_line(proc, "--repo")


def test_unreadable_token_file_names_the_flag(main, tmp_path):
    token = tmp_path / "token"
    proc = main(["sync", "--repo", "/nonexistent", "--git-token-file", str(token)])
    assert_one_line(proc, "--git-token-file", str(token), "No such file or directory")


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


@pytest.mark.parametrize("args, needle", [
    (["--kubeconfig", "/etc/passwd"], "from /etc/passwd: NoConfiguration: not a kubeconfig file"),
    (["--kubeconfig", "/nonexistent/kubeconfig"], "the file does not exist"),
    ([], "give --kubeconfig FILE"),
])
def test_a_bad_or_missing_kubeconfig_is_one_line(main, tmp_path, monkeypatch, args, needle):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    proc = main(["sync", "--repo", str(repo), "--cache-dir", str(tmp_path / "cache"), *args])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: loading the cluster configuration") and needle in lines[0]
