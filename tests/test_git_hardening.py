"""Git hardening against the real control plane (issue 42): ``sync --once`` killed mid-fetch
leaves no Git process behind and the next sync works; a server that echoes the token's Basic
header gets no form of it into statuses, Events or output; a redirect to another host never
gets the token; a commit whose ``.gitmodules`` hangs (an ``[include]`` of /proc/self/fd/1, or a
submodule whose server never answers) fails the pass in bounded time, with no Git child left and
nothing pruned; a pass of ``run`` stuck past ``--stuck-pass-after`` makes ``/healthz`` fail; a tree
entry named ``..`` is refused by name with exit code 2 and nothing pruned. Loopback servers only
(127.0.0.2 is another host on the loopback interface).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import ThreadingHTTPServer

import pytest

from agent.common import redaction
from tests import faults
from tests.support import app_yaml, wait_for
from tests.test_run import start_agent  # noqa: F401 (fixture)
from tests.unit.source.test_git_hardening import Echo, Redirect, git_processes, gitlink, needs_other_host

TOKEN = "SECRET-TOKEN-0042"
pytestmark = pytest.mark.usefixtures("crd")  # the Application CRD installed


def test_kill_9_of_sync_mid_fetch_leaves_no_git_running_and_the_next_sync_works(agent, repo, namespace,
                                                                                   objects, tmp_path):
    """A fault test found ``git fetch`` running on after a kill -9 of ``sync --once``, holding the
    mirror's ref locks, so the next sync failed with ``cannot lock ref``."""
    repo.write("web.yaml", app_yaml("web"))
    repo.commit("web")
    faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    with faults.GitHttpServer(tmp_path / "srv") as server:
        url = server.url("apps.git")
        assert agent.sync(url, "--namespace", namespace).returncode == 0  # a warm mirror: the locks matter
        repo.write("web.yaml", app_yaml("web", replicas=2))
        repo.commit("two")
        subprocess.run(["git", "-C", str(tmp_path / "srv" / "apps.git"), "fetch", "-q", str(repo.path),
                        "+main:main"], check=True, capture_output=True, timeout=60)
        server.set_mode(faults.HANG)
        cmd = [sys.executable, "-m", "agent", "sync", "--once", "--repo", url, "--namespace", namespace,
               "--kubeconfig", str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), "--fetch-timeout", "600"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_AGENT_")}
        proc = subprocess.Popen(cmd, cwd=agent.cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: git_processes(f":{server.port}/") and server.requests, timeout=60,
                     what="sync to be fetching from the hanging server")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        wait_for(lambda: not git_processes(f":{server.port}/"), timeout=10, what="every git process to end")
        server.set_mode(faults.OK)
        done = agent.sync(url, "--namespace", namespace)
    assert done.returncode == 0, done.stderr
    assert "lock" not in done.stderr
    assert objects.deployment(namespace, "web")["spec"]["replicas"] == 2


def test_a_server_echoing_the_basic_header_gets_no_form_of_the_token_anywhere(agent, repo, namespace, objects,
                                                                              tmp_path):
    """The token's Basic form, echoed by the server in an error body, reached three statuses, the
    page and the logs: now no form of it is in the Applications, the Events or the output."""
    repo.write("web.yaml", app_yaml("web"))
    repo.write("bad.yaml", app_yaml("bad", replicas=-1))  # statuses and Events with messages
    repo.commit("web")
    faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    env = {"GITOPS_AGENT_GIT_TOKEN": TOKEN, "GITOPS_AGENT_LOG_LEVEL": "DEBUG"}
    procs = []
    with faults.GitHttpServer(tmp_path / "srv") as server:
        procs.append(agent.sync(server.url("apps.git"), "--namespace", namespace, "--source-id", "hardening",
                                env=env))
        assert all(objects.trio(namespace, "web"))
    echo = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=echo.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{echo.server_address[1]}/apps.git"
        procs.append(agent.sync(url, "--namespace", namespace, "--source-id", "hardening", env=env))
    finally:
        echo.shutdown()
        echo.server_close()
    assert procs[-1].returncode == 2 and "you sent Basic ***" in procs[-1].stderr
    app = objects.app(namespace, "web")
    assert any(c["type"] == "SourceAvailable" and c["status"] == "False" for c in app["status"]["conditions"])
    forms = redaction.forms(TOKEN, ["git"])
    stored = json.dumps(objects.custom.list_namespaced_custom_object("heumsi.github.io", "v1", namespace,
                                                                     "applications")) + json.dumps(
        objects.events(namespace))
    for form in forms:
        assert form not in stored
        for proc in procs:
            assert form not in proc.stdout + proc.stderr


@needs_other_host
def test_a_redirect_to_another_host_never_gets_the_token(agent, repo, namespace, objects, tmp_path):
    repo.write("web.yaml", app_yaml("web"))
    repo.commit("web")
    faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    with faults.GitHttpServer(tmp_path / "srv", host="127.0.0.2") as elsewhere:
        redirect = Redirect(f"http://127.0.0.2:{elsewhere.port}")
        try:
            proc = agent.sync(f"{redirect.url}/apps.git", "--namespace", namespace,
                              env={"GITOPS_AGENT_GIT_TOKEN": TOKEN})
        finally:
            redirect.close()
    assert proc.returncode == 2 and "redirect (HTTP 302)" in proc.stderr
    assert redirect.seen and not elsewhere.requests
    assert objects.app(namespace, "web") is None
    basic = base64.b64encode(f"git:{TOKEN}".encode()).decode()
    assert basic not in proc.stdout + proc.stderr and TOKEN not in proc.stdout + proc.stderr


def test_a_token_over_plain_http_to_another_host_is_refused_in_one_line(agent, namespace):
    proc = agent.sync("http://git.example.com/team/apps.git", "--namespace", namespace,
                      env={"GITOPS_AGENT_GIT_TOKEN": TOKEN})
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "--allow-insecure-http" in proc.stderr
    assert TOKEN not in proc.stderr



def two_apps_synced(agent, repo, namespace, objects, url: str, serve=None) -> None:
    """``apps/web.yaml`` and ``apps/api.yaml`` committed (then ``serve()``, when given) and synced
    from ``url``: both exist, so a later pass of the same source that fails to read its commit has
    ``api`` to prune if it went on."""
    repo.write("apps/web.yaml", app_yaml("web", replicas=0))
    repo.write("apps/api.yaml", app_yaml("api", replicas=0))
    repo.commit("two apps")
    if serve is not None:
        serve()
    proc = agent.sync(url, "--path", "apps", "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    assert objects.app(namespace, "web") and objects.app(namespace, "api")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("hang", ["include", "submodule-server"])
def test_a_commit_whose_gitmodules_hangs_fails_the_pass_in_bounded_time_with_no_git_left_and_nothing_pruned(
        agent, repo, namespace, objects, tmp_path, hang):
    """Issue 42: a ``.gitmodules`` with ``[include] path = /proc/self/fd/1`` blocked a ``git config
    --blob`` with no timeout, and every pass with it, for ever. ``include``: includes are off, so the
    read fails at once by name. ``submodule-server``: the submodule's server accepts and never answers,
    so Git hangs for real; it is killed at ``--fetch-timeout`` with its process group. Either way the
    pass fails (exit 2), well within its bound, no Git process is left, and ``api``, which the commit
    removes, is not pruned."""
    srv = tmp_path / "srv"
    with faults.GitHttpServer(srv) as home, faults.GitHttpServer(tmp_path / "srv2", mode=faults.HANG) as hanging:
        url = home.url("apps.git")
        two_apps_synced(agent, repo, namespace, objects, url, lambda: faults.bare_clone(repo.path, srv / "apps.git"))
        repo.remove("apps/api.yaml")
        if hang == "include":
            repo.write(".gitmodules", '[submodule "s"]\n\tpath = apps/sub\n[include]\n\tpath = /proc/self/fd/1\n')
            repo.git("add", "-A")
            repo.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},apps/sub")
            repo.git("commit", "-qm", "include /proc/self/fd/1")
        else:
            repo.commit("api removed")
            gitlink(repo, "apps/sub", hanging.url("sub.git"), "2" * 40)
        subprocess.run(["git", "-C", str(srv / "apps.git"), "fetch", "-q", str(repo.path), "+main:main"],
                       check=True, capture_output=True, timeout=60)
        started = time.monotonic()
        proc = agent.sync(url, "--path", "apps", "--namespace", namespace, "--fetch-timeout", "5", timeout=120)
        elapsed = time.monotonic() - started
        for needle in (str(agent.cache_dir), f":{hanging.port}/"):  # the mirror's commands, the submodule's fetch
            assert not git_processes(needle), f"a Git process outlived the pass: {git_processes(needle)}"
        if hang == "submodule-server":
            assert hanging.requests  # Git did ask the hanging server: its child was killed, not skipped
    assert proc.returncode == 2, proc.stderr
    assert elapsed < 60, f"the pass took {elapsed:.0f}s"
    assert "apps/sub" in proc.stderr and "nothing was changed or pruned" in proc.stderr, proc.stderr
    if hang == "include":
        assert "no URL in .gitmodules" in proc.stderr
    else:
        assert "failed: no answer within 5s" in proc.stderr  # --fetch-timeout: the child was killed then
    assert objects.app(namespace, "api") is not None and objects.app(namespace, "web") is not None


@pytest.mark.timeout(300)
def test_a_pass_of_run_stuck_past_its_bound_makes_healthz_fail(start_agent, repo, namespace, tmp_path):
    """Issue 42: a pass hung for ever while ``/healthz`` answered 200, so nothing restarted the pod.
    Here every Git request hangs (the server accepts and never answers) and the fetch timeout is
    long: once the pass has run past ``--stuck-pass-after`` (2 s here; 3 intervals, at least 600 s,
    by default) ``/healthz`` answers 503 naming the stuck pass. SIGTERM still ends the process and
    leaves no Git child."""
    repo.write("web.yaml", app_yaml("web", replicas=0))
    repo.commit("web")
    faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    with faults.GitHttpServer(tmp_path / "srv", mode=faults.HANG) as server:
        agent = start_agent(server.url("apps.git"), "--namespace", namespace, "--interval", "1",
                            "--fetch-timeout", "600", "--stuck-pass-after", "2", "--shutdown-grace", "1")
        wait_for(lambda: server.requests, timeout=30, what="the pass to ask the hanging server")
        code, body = wait_for(lambda: (lambda got: got if got[0] == 503 else None)(agent.get("/healthz")),
                              timeout=30, what="/healthz 503")
        assert "it is stuck" in body and "limit 2s" in body, body
        assert agent.stop(timeout=30) is not None
        wait_for(lambda: not git_processes(f":{server.port}/"), timeout=10, what="every git process to end")


def test_a_tree_entry_named_dotdot_is_refused_by_name_with_exit_2_and_nothing_pruned(agent, repo, namespace,
                                                                                    objects):
    """Issue 42: a tree entry named ``..`` stopped every pass with an internal error. Now the read
    fails by name (the directory, the commit, the entry), with exit code 2 (docs/reference: an
    error before any change), and ``api``, which the commit removes, is not pruned."""
    two_apps_synced(agent, repo, namespace, objects, str(repo.path))
    web = repo.git("rev-parse", "HEAD:apps/web.yaml")
    inner = subprocess.run(["git", "mktree"], input=f"100644 blob {web}\tx.yaml\n", text=True, cwd=repo.path,
                           capture_output=True, check=True).stdout.strip()
    entries = [(b"100644 web.yaml", web), (b"40000 ..", inner)]  # api.yaml removed; git mktree refuses ".."
    raw = b"".join(mode + b"\0" + bytes.fromhex(sha) for mode, sha in sorted(entries, key=lambda e: e[0].split(b" ")[1]))
    apps = subprocess.run(["git", "hash-object", "-t", "tree", "-w", "--literally", "--stdin"], input=raw,
                          cwd=repo.path, capture_output=True, check=True).stdout.decode().strip()
    top = subprocess.run(["git", "mktree"], input=f"040000 tree {apps}\tapps\n", text=True, cwd=repo.path,
                         capture_output=True, check=True).stdout.strip()
    commit = repo.git("commit-tree", top, "-p", "HEAD", "-m", "hostile")
    repo.git("update-ref", "refs/heads/main", commit)
    proc = agent.sync(str(repo.path), "--path", "apps", "--namespace", namespace)
    assert proc.returncode == 2, proc.stderr
    assert f"directory 'apps' in commit {commit} holds an entry named '..'" in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr
    assert objects.app(namespace, "api") is not None and objects.app(namespace, "web") is not None
