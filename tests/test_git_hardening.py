"""Git hardening against the real control plane (issue 42): ``sync --once`` killed mid-fetch
leaves no Git process behind and the next sync works; a server that echoes the token's Basic
header gets no form of it into statuses, Events or output; a redirect to another host never
gets the token. Loopback servers only (127.0.0.2 is another host on the loopback interface).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer

import pytest

from agent.common import redaction
from tests import faults
from tests.support import app_yaml, wait_for
from tests.unit.source.test_git_hardening import Echo, Redirect, git_processes, needs_other_host

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

