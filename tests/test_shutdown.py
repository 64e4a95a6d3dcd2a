"""SIGTERM ends ``run`` within ``--shutdown-grace`` plus a second in every state, with exit 0:
idle between passes, in the middle of a pass, while the API server is unreachable (the pass is
retrying) and while the Git remote does not answer (the fetch hangs). Where nothing is left to
wait for (a hanging fetch, an API retry's wait, the rate limit's wait) it ends within about 2 s
even with a long ``--shutdown-grace``, and the pass cut short changes and prunes nothing. And a
clean stop hands the leader Lease over at once instead of after it expires.

These are promises in seconds, so the bounds here are the promise plus slack for a loaded
machine (``SLACK``), or, where the point is what the agent does not wait for, a small fraction of
what it would have waited (``LONG_GRACE``, a 300 s fetch timeout, a 60 s lease): no load
stretches a prompt exit that far."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tests import faults
from tests.proxy import FaultProxy
from tests.support import app_yaml, wait_for
from tests.test_run import image_of, remote, start_agent  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("crd")
GRACE = 3.0
SLACK = 10.0  # the process's own start of handling the signal and its exit, on a loaded machine
LONG_GRACE = 120.0  # with it, an exit within PROMPT seconds shows the grace was not waited for
PROMPT = 20.0  # about 2 s on an idle machine


def stop_timed(agent) -> tuple[int, float]:
    """SIGTERM, then (exit code, seconds until the process was gone)."""
    started = time.monotonic()
    code = agent.stop(signal.SIGTERM, timeout=60)
    return code, time.monotonic() - started


def assert_prompt_clean_exit(agent):
    code, seconds = stop_timed(agent)
    assert code == 0, agent.output()
    assert seconds < GRACE + SLACK, f"took {seconds:.1f}s"  # the promise: GRACE + 1 s on an idle machine
    assert "Traceback" not in agent.output()


def wait_for_quiet(agent, quiet: float = 3.0) -> None:
    """Wait until no pass has ended for ``quiet`` seconds: the first pass's children change as their
    controllers roll them out, and each change starts a watch-triggered pass, so "one pass done" is
    not yet "idle"."""
    def passes():
        return sum(agent.metric("gitops_agent_passes_total", result=r) for r in ("success", "failure"))
    seen = {"count": passes(), "since": time.monotonic()}

    def still():
        count = passes()
        if count != seen["count"]:
            seen.update(count=count, since=time.monotonic())
        return time.monotonic() - seen["since"] >= quiet
    wait_for(still, timeout=60, interval=0.2, what=f"{quiet:.0f}s with no pass")


def test_sigterm_when_idle(start_agent, repo, remote, namespace):  # noqa: F811
    repo.write("a.yaml", app_yaml("web"))
    remote.push()
    agent = start_agent(remote.url, "--interval", "60", "--namespace", namespace, "--shutdown-grace", str(GRACE))
    wait_for(lambda: agent.metric("gitops_agent_passes_total", result="success") >= 1, timeout=60, what="a pass")
    wait_for_quiet(agent)
    assert_prompt_clean_exit(agent)
    assert "stopping: no pass is running" in agent.output() and "waiting up to" not in agent.output()


def test_sigterm_mid_pass(start_agent, repo, remote, namespace, objects):  # noqa: F811
    for i in range(20):
        repo.write(f"a{i}.yaml", app_yaml(f"app{i}"))
    remote.push()
    agent = start_agent(remote.url, "--interval", "60", "--namespace", namespace, "--shutdown-grace", str(GRACE))
    wait_for(lambda: objects.deployment(namespace, "app0") is not None, timeout=60, interval=0.05,
             what="the pass to be under way")
    assert_prompt_clean_exit(agent)
    assert f"stopping: waiting up to {GRACE:.0f}s for the running pass" in agent.output()


def test_sigterm_while_the_git_remote_hangs(start_agent, repo, namespace, tmp_path):  # noqa: F811
    repo.write("a.yaml", app_yaml("web"))
    repo.commit()
    faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    with faults.GitHttpServer(tmp_path / "srv", mode=faults.HANG) as server:
        agent = start_agent(server.url("apps.git"), "--interval", "60", "--namespace", namespace,
                            "--fetch-timeout", "300", "--shutdown-grace", str(GRACE))
        wait_for(lambda: server.requests, timeout=30, what="the fetch to reach the hanging remote")
        time.sleep(0.5)
        assert_prompt_clean_exit(agent)


def test_a_clean_stop_hands_the_lease_over_at_once(start_agent, repo, remote, namespace, objects,  # noqa: F811
                                                   cluster):
    repo.write("a.yaml", app_yaml("web", image="nginx:1"))
    remote.push()
    flags = ["--interval", "60", "--namespace", namespace, "--leader-elect", "--lease-namespace", namespace,
             "--lease-duration", "60", "--no-watch", "--shutdown-grace", str(GRACE)]
    first = start_agent(remote.url, *flags, "--identity", "first", cache="cache-1")
    wait_for(lambda: first.metric("gitops_agent_leader") == 1, timeout=60, what="first to lead")
    second = start_agent(remote.url, *flags, "--identity", "second", cache="cache-2")
    wait_for(lambda: image_of(objects, namespace, "web") == "nginx:1", timeout=60, what="first sync")
    time.sleep(3)
    assert second.metric("gitops_agent_leader") == 0
    stopped = time.monotonic()  # measured from SIGTERM: the standby may take over before the old leader exits
    code, _ = stop_timed(first)
    assert code == 0, first.output()
    wait_for(lambda: second.metric("gitops_agent_leader") == 1, timeout=50, interval=0.1,
             what="the standby to lead")
    handover = time.monotonic() - stopped
    print(f"lease hand-over after a clean stop: {handover:.1f}s (lease duration 60s)")
    # the standby tries every 8 s (a seventh of the lease); were the Lease not released, it would
    # wait for it to expire: at least 60 s less one retry period after the stop
    assert handover < 50, f"hand-over took {handover:.1f}s"
    lease = json.loads(cluster.kubectl("get", "lease", "gitops-agent", "-n", namespace, "-o", "json").stdout)
    assert lease["spec"]["holderIdentity"] == "second"
    assert "released the leader lease" in first.output()


def git_processes(needle: str) -> list[str]:
    """Command lines of running Git processes (``git``, ``git-remote-http``, ...) that mention
    ``needle`` (e.g. the remote's port)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if os.path.basename(argv[0]).startswith("git") and needle in " ".join(argv):
            found.append(" ".join(argv))
    return found


def test_sigterm_ends_a_hanging_fetch_at_once_and_the_pass_changes_nothing(  # noqa: F811
        start_agent, agent, repo, namespace, objects, tmp_path):
    repo.write("web.yaml", app_yaml("web"))
    repo.write("db.yaml", app_yaml("db"))
    repo.commit()
    bare = faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    with faults.GitHttpServer(tmp_path / "srv") as server:
        url = server.url("apps.git")
        assert agent.sync(url, "--namespace", namespace).returncode == 0  # the mirror the agent will reuse
        repo.remove("db.yaml")  # a pass that read this commit would prune db
        repo.commit()
        faults.push(repo.path, bare)
        before = objects.versions(namespace, ["web", "db"])
        server.set_mode(faults.HANG)
        running = start_agent(url, "--interval", "300", "--namespace", namespace, "--fetch-timeout", "300",
                              "--shutdown-grace", str(LONG_GRACE))
        wait_for(lambda: server.requests and git_processes(f"127.0.0.1:{server.port}"), timeout=30,
                 what="the fetch to wait on the hanging remote")
        time.sleep(0.5)
        code, seconds = stop_timed(running)
        assert code == 0, running.output()
        assert seconds < PROMPT, f"took {seconds:.1f}s with --shutdown-grace {LONG_GRACE:g}"
        assert "Traceback" not in running.output()
        assert "interrupted: the agent is shutting down" in running.output()
        assert git_processes(f"127.0.0.1:{server.port}") == []  # the whole process group was ended
        assert objects.versions(namespace, ["web", "db"]) == before  # nothing written, db not pruned
        assert running.metric("gitops_agent_passes_total", result="success") == 0
        assert [p for p in agent.cache_dir.rglob("*.lock")] == []  # Git removed its lock files
        server.set_mode(faults.OK)
        proc = agent.sync(url, "--namespace", namespace)  # the mirror still works
        assert proc.returncode == 0, proc.stderr
        assert objects.app(namespace, "db") is None and objects.app(namespace, "web") is not None


def test_sigterm_during_the_api_retry_wait_does_not_wait_for_the_grace(  # noqa: F811
        start_agent, repo, remote, namespace, cluster, tmp_path):
    proxy = FaultProxy(int(cluster.server.rsplit(":", 1)[1]))
    try:
        kubeconfig = proxy.kubeconfig(cluster.kubeconfig, tmp_path / "proxied")
        repo.write("a.yaml", app_yaml("web"))
        remote.push()
        agent = start_agent(remote.url, "--interval", "1", "--namespace", namespace, "--no-watch",
                            "--shutdown-grace", str(LONG_GRACE), "--api-retry-seconds", "120", kubeconfig=kubeconfig)
        wait_for(lambda: agent.metric("gitops_agent_passes_total", result="success") >= 1, timeout=60,
                 what="a pass")
        proxy.cut()
        wait_for(lambda: "retrying in" in agent.output(), timeout=30, what="a pass retrying the API server")
        assert "Unreachable" in agent.output() and "attempt" in agent.output()  # what failed, when next
        code, seconds = stop_timed(agent)
        assert code == 0 and "Traceback" not in agent.output(), agent.output()
        assert seconds < PROMPT, f"took {seconds:.1f}s with --shutdown-grace {LONG_GRACE:g}"
    finally:
        proxy.close()


def test_sigterm_while_waiting_for_the_rate_limit_does_not_wait_for_the_grace(  # noqa: F811
        start_agent, repo, remote, namespace, objects):
    repo.write("a.yaml", app_yaml("web", replicas=0))
    remote.push()
    # one request every 10 s: the first pass waits for its second token, and the watches for theirs;
    # were that wait not ended, the pass (several requests more) would hold the exit past PROMPT
    agent = start_agent(remote.url, "--interval", "300", "--namespace", namespace, "--shutdown-grace",
                        str(LONG_GRACE), "--kube-api-qps", "0.1", "--kube-api-burst", "1")
    time.sleep(3)
    assert objects.service(namespace, "web") is None  # still throttled, mid-pass
    code, seconds = stop_timed(agent)
    assert code == 0, agent.output()
    assert seconds < PROMPT, f"took {seconds:.1f}s with --shutdown-grace {LONG_GRACE:g}"
    assert "Traceback" not in agent.output()


@pytest.mark.parametrize("command, sig, code, name", [("sync", signal.SIGINT, 130, "interrupted (SIGINT)"),
                                                     ("diff", signal.SIGINT, 130, "interrupted (SIGINT)"),
                                                     ("sync", signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_a_signal_ends_a_one_shot_command_and_its_git_fetch_at_once_with_one_line(command, sig, code, name, agent,
                                                                                 repo, namespace, tmp_path):
    """SIGINT (Ctrl-C) or SIGTERM (a CI job's timeout) to ``sync`` or ``diff`` while the fetch
    hangs: exit 128 + the signal within PROMPT seconds, one line, no KeyboardInterrupt
    traceback, and no Git process of the fetch left running."""
    import subprocess
    import sys

    repo.write("a.yaml", app_yaml("web"))
    repo.commit()
    faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    with faults.GitHttpServer(tmp_path / "srv", mode=faults.HANG) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_AGENT_")}
        proc = subprocess.Popen([sys.executable, "-m", "agent", command, "--repo", server.url("apps.git"),
                                 "--kubeconfig", str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir),
                                 "--namespace", namespace, "--fetch-timeout", "300"],
                                cwd=agent.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: server.requests, timeout=30, what="the fetch to reach the hanging remote")
        time.sleep(0.5)
        started = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        assert time.monotonic() - started < PROMPT
        # its Git fetch (in a session of its own: no signal to the agent reaches it) ended with it
        wait_for(lambda: not _commands_naming(server.url("apps.git")), timeout=10, what="the agent's git fetch to end")
    assert proc.returncode == code, out + err
    assert err.splitlines() == [f"{name}: stopped at once; what was already written stays, nothing "
                                "further was changed or pruned"]


def _commands_naming(text: str) -> list[str]:
    """Command lines of this machine's processes that hold ``text`` (read from /proc)."""
    from pathlib import Path

    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            line = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        if text in line:
            found.append(line)
    return found


@pytest.mark.parametrize("command", ["sync", "run"])
def test_sigterm_ends_a_fetch_from_a_silent_git_daemon_within_2_seconds(command, start_agent, agent,  # noqa: F811
                                                                        namespace):
    """A ``git://`` remote that accepts the connection and never answers (a raw TCP server, so
    Git itself, not a helper, waits): SIGTERM to ``sync --once`` or ``run`` ends the process in
    under 2 s on an idle machine (PROMPT here, against a 300 s fetch timeout and a 120 s grace),
    and every Git process it started is dead when it is gone."""
    import subprocess
    import sys

    with faults.SilentTcpServer() as server:
        url = f"git://127.0.0.1:{server.port}/apps.git"
        if command == "run":
            proc = start_agent(url, "--interval", "300", "--namespace", namespace, "--fetch-timeout", "300",
                               "--shutdown-grace", str(LONG_GRACE)).proc
        else:
            env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_AGENT_")}
            proc = subprocess.Popen([sys.executable, "-m", "agent", "sync", "--once", "--repo", url, "--kubeconfig",
                                     str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), "--namespace",
                                     namespace, "--fetch-timeout", "300"], cwd=agent.cwd, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def gits() -> list[int]:
            return [pid for pid in faults._descendants(proc.pid)[1:] if faults.live_processes([pid])
                    and faults.live_processes([pid])[0].split()[1].startswith("git")]

        wait_for(lambda: server.accepted and gits(), timeout=30, what="the fetch to wait on the silent remote")
        time.sleep(0.5)
        fetching = gits()
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        seconds = time.monotonic() - started
        assert faults.live_processes(fetching) == []  # killed, not left behind
    assert code == (0 if command == "run" else 143)
    assert seconds < PROMPT, f"took {seconds:.1f}s"
