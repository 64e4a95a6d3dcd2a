"""Push webhooks (``POST /hooks/git``) on a real ``python -m agent run`` process against the real
control plane and real Git remotes. Every agent runs with ``--interval 300``, so only the hook
can explain a quick sync; refused requests are checked to start no pass through
``gitops_agent_passes_total``."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import sys
import time
import urllib.error
import urllib.request

import pytest

from agent.server.runner import ONLINE_SPACING
from tests.support import app_yaml, wait_for
from tests.test_run import image_of, remote, start_agent  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("crd")
SECRET = "webhook-secret-0123456789"
SLOW = ["--interval", "300"]


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def push_payload(ref: str = "refs/heads/main", after: str = "0" * 40) -> bytes:
    """What GitHub sends for a push, trimmed (the agent reads only ``ref``)."""
    return json.dumps({"ref": ref, "before": "0" * 40, "after": after, "repository": {"full_name": "you/apps"},
                       "pusher": {"name": "dev"}, "commits": [{"id": after, "message": "change"}]}).encode()


def post(agent, body: bytes, headers: dict, method: str = "POST") -> tuple[int, dict]:
    """One request to the agent's /hooks/git; returns (status, JSON answer or {})."""
    request = urllib.request.Request(f"http://127.0.0.1:{agent.port}/hooks/git", data=body, method=method,
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            code, text = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        code, text = err.code, err.read()
    try:
        return code, json.loads(text)
    except ValueError:
        return code, {}


def github(agent, body: bytes, event: str = "push", secret: str = SECRET) -> int:
    return post(agent, body, {"X-GitHub-Event": event, "X-GitHub-Delivery": "d-1",
                              "X-Hub-Signature-256": sign(body, secret)})[0]


def passes(agent) -> float:
    return (agent.metric("gitops_agent_passes_total", result="success")
            + agent.metric("gitops_agent_passes_total", result="failure"))


def hooks(agent, result: str) -> float:
    return agent.metric("gitops_agent_webhook_requests_total", result=result)


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "webhook-secret"
    path.write_text(SECRET + "\n")  # as a mounted Secret often ends
    return path


def started(start_agent, remote, repo, namespace, objects, *flags, image="nginx:1", env=None):
    """An agent syncing one Application ``web`` with ``image``, after its first pass."""
    repo.write("a.yaml", app_yaml("web", image=image))
    remote.push()
    agent = start_agent(remote.url, *SLOW, "--namespace", namespace, *flags, env=env)
    wait_for(lambda: passes(agent) >= 1 and image_of(objects, namespace, "web") == image, timeout=30,
             what="the first pass")
    return agent


def test_a_signed_github_push_lands_within_5_seconds(start_agent, repo, remote, namespace, objects, secret_file):
    agent = started(start_agent, remote, repo, namespace, objects, "--webhook-secret-file", str(secret_file))
    repo.write("a.yaml", app_yaml("web", image="nginx:2"))
    head = remote.push()
    sent = time.monotonic()
    assert github(agent, push_payload(after=head)) == 202
    # about a second on an idle machine; the next interval pass is 300 s away (SLOW), so the commit
    # landing within 60 s, however loaded the machine, is the webhook's doing
    wait_for(lambda: image_of(objects, namespace, "web") == "nginx:2", timeout=60, interval=0.1,
             what="the pushed commit")
    print(f"push to applied: {time.monotonic() - sent:.1f}s")
    wait_for(lambda: (objects.app(namespace, "web").get("status") or {}).get("lastSyncedCommit") == head,
             timeout=60, what="status to record the pushed commit")
    assert hooks(agent, "accepted") == 1
    lines = [line for line in agent.output().splitlines() if "webhook" in line and "accepted" in line]
    assert len(lines) == 1 and "refs/heads/main" in lines[0] and "you/apps" not in lines[0]  # no body in the log


def test_gitlab_token_and_generic_signature_from_the_environment(start_agent, repo, remote, namespace, objects):
    agent = started(start_agent, remote, repo, namespace, objects, env={"GITOPS_AGENT_WEBHOOK_SECRET": SECRET})
    repo.write("a.yaml", app_yaml("web", image="nginx:2"))
    remote.push()
    body = json.dumps({"object_kind": "push", "ref": "refs/heads/main"}).encode()
    assert post(agent, body, {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": SECRET})[0] == 202
    wait_for(lambda: image_of(objects, namespace, "web") == "nginx:2", timeout=60, interval=0.1, what="GitLab push")
    repo.write("a.yaml", app_yaml("web", image="nginx:3"))
    remote.push()
    body = b'{"ref": "refs/heads/main"}'
    assert post(agent, body, {"X-Signature": sign(body)})[0] == 202
    wait_for(lambda: image_of(objects, namespace, "web") == "nginx:3", timeout=60, interval=0.1, what="generic push")


def _raw_post(port: int, head: bytes) -> int:
    """Send only a request head (no body) and return the status the agent answers with."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        return int(sock.recv(4096).split(b" ", 2)[1])


def test_refused_and_ignored_requests_start_no_pass(start_agent, repo, remote, namespace, objects, secret_file):
    agent = started(start_agent, remote, repo, namespace, objects, "--webhook-secret-file", str(secret_file),
                    "--no-watch")
    repo.write("a.yaml", app_yaml("web", image="nginx:2"))
    head = remote.push()  # a pass now would change the cluster
    before = passes(agent)
    body = push_payload(after=head)
    assert post(agent, body, {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(body, "wrong")})[0] == 401
    assert post(agent, body, {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(body + b" ")})[0] == 401
    assert post(agent, body, {"X-GitHub-Event": "push"})[0] == 401  # no signature at all
    off_by_one = SECRET[:-1] + chr(ord(SECRET[-1]) + 1)
    assert post(agent, body, {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": off_by_one})[0] == 401
    assert post(agent, body, {"X-Gitlab-Token": SECRET[:-1]})[0] == 401
    too_big = (b"POST /hooks/git HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"X-Hub-Signature-256: " + sign(b"x").encode() + b"\r\nContent-Length: 1048577\r\n\r\n")
    assert _raw_post(agent.port, too_big) == 413  # judged from Content-Length, the body never sent
    assert _raw_post(agent.port, b"POST /hooks/git HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                 b"Transfer-Encoding: chunked\r\n\r\n") == 411
    garbage = b'{"ref": "refs/heads/main", '
    assert github(agent, garbage) == 400
    assert github(agent, b'["refs/heads/main"]') == 400
    assert post(agent, body, {"Content-Type": "text/plain", "X-Hub-Signature-256": sign(body)})[0] == 415
    assert post(agent, b"", {}, method="GET")[0] == 405
    # authenticated, but nothing to do: a ping, another event, a push to another branch
    assert github(agent, json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode(), "ping") == 202
    assert github(agent, body, "issues") == 202
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("a.yaml", app_yaml("web", image="nginx:feature"))
    repo.commit()
    repo.git("push", "-q", str(remote.path), "feature")
    assert github(agent, push_payload("refs/heads/feature")) == 202  # no --ref: the remote HEAD is main
    # four clients that never finish their bodies hold no slot (the listener reads bodies before the
    # handler sees them, issue 42): a fifth is judged at once, and the slow ones are cut off once
    # their declared length is overdue (2 s plus 1 s per 64 KiB)
    slow = [socket.create_connection(("127.0.0.1", agent.port), timeout=20) for _ in range(4)]
    for sock in slow:
        sock.sendall(b"POST /hooks/git HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{")
    time.sleep(0.5)
    assert post(agent, body, {"X-Hub-Signature-256": sign(body, "wrong")})[0] == 401
    assert [int(sock.recv(4096).split(b" ", 2)[1]) for sock in slow] == [408] * 4
    for sock in slow:
        sock.close()
    assert passes(agent) == before
    assert image_of(objects, namespace, "web") == "nginx:1"
    assert hooks(agent, "unauthorized") == 6 and hooks(agent, "too_large") == 1
    assert hooks(agent, "malformed") == 2 and hooks(agent, "ignored") == 3 and hooks(agent, "accepted") == 0
    assert hooks(agent, "busy") == 0 and hooks(agent, "timeout") == 4
    assert "Keep it logically awesome" not in agent.output()
    assert agent.get("/healthz")[0] == 200  # still serving


def test_fifty_hits_in_one_second_cause_at_most_two_passes(start_agent, repo, remote, namespace, objects,
                                                          secret_file):
    agent = started(start_agent, remote, repo, namespace, objects, "--webhook-secret-file", str(secret_file),
                    "--no-watch", "--ref", "main")
    repo.write("a.yaml", app_yaml("web", image="nginx:2"))
    head = remote.push()
    before = passes(agent)
    body = push_payload(after=head)
    first = time.monotonic()
    codes = []
    for i in range(50):
        codes.append(github(agent, body))
        time.sleep(max(0.0, first + (i + 1) * 0.02 - time.monotonic()))
    burst = time.monotonic() - first  # about 1 s; longer on a loaded machine
    assert codes == [202] * 50
    wait_for(lambda: image_of(objects, namespace, "web") == "nginx:2", timeout=60, what="the pushed commit")
    time.sleep(3)
    # online passes start at least ONLINE_SPACING apart, and the hits after the last start share
    # one more: at most 2 for a burst within a second, a few more if the machine stretched it
    assert 1 <= passes(agent) - before <= 2 + int(burst / ONLINE_SPACING), f"{burst:.1f}s of hits"


def test_the_endpoint_is_404_without_a_secret(start_agent, repo, remote, namespace, objects):
    agent = started(start_agent, remote, repo, namespace, objects)
    body = push_payload()
    assert github(agent, body) == 404
    assert post(agent, b"", {}, method="GET")[0] == 404
    assert agent.metric("gitops_agent_webhook_requests_total", result="accepted") == 0


@pytest.mark.parametrize("content", [None, "", "\n"])
def test_a_missing_or_empty_secret_file_exits_2_with_one_line(agent, tmp_path, content):
    path = tmp_path / "secret"
    if content is not None:
        path.write_text(content)
    proc = agent.run([sys.executable, "-m", "agent", "run", "--repo", str(tmp_path), "--kubeconfig",
                      str(agent.kubeconfig), "--http-addr", "127.0.0.1:0", "--webhook-secret-file", str(path)],
                     timeout=30)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    rule = "a readable file (No such file or directory)" if content is None else \
        "a file holding a non-empty secret (it is empty)"
    assert lines[0] == (f"python -m agent run: error: argument --webhook-secret-file: {str(path)!r} is not allowed: "
                        f"must be {rule} (see python -m agent run --help)")


def test_an_empty_secret_in_the_environment_exits_2(agent, tmp_path):
    proc = agent.run([sys.executable, "-m", "agent", "run", "--repo", str(tmp_path), "--kubeconfig",
                      str(agent.kubeconfig), "--http-addr", "127.0.0.1:0"],
                     env={"GITOPS_AGENT_WEBHOOK_SECRET": ""}, timeout=30)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == ("python -m agent run: error: argument --webhook-secret-file: GITOPS_AGENT_WEBHOOK_SECRET='' "
                           "is not allowed: must be a non-empty secret (or unset, for no webhook) "
                           "(see python -m agent run --help)\n")
