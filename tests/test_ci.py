"""CI mode against the real control plane: `diff`, `sync --dry-run`, `-o json|markdown`, progress."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import time
import uuid
from pathlib import Path

import jsonschema
import pytest

from tests.support import api_writes, app_yaml, wait_for

pytestmark = pytest.mark.usefixtures("crd")
ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "agent" / "report.schema.json").read_text())
RESOURCES = ("applications", "deployments", "services", "events", "namespaces")


def run(agent, command, repo, namespace, *args, env=None):
    cmd = [sys.executable, "-m", "agent", command, "--repo", str(repo.path), "--namespace", namespace,
           "--kubeconfig", str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), *args]
    return agent.run(cmd, env=env)


def schema_valid(doc):
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return doc


def write_requests(cluster) -> dict:
    """Non-dry-run writes to the agent's kinds so far (``support.api_writes``)."""
    return api_writes(cluster, RESOURCES)


def quiet_write_requests(cluster, settle: float = 3.0, timeout: float = 90.0):
    """The write counters once they held still for ``settle`` seconds (controllers done)."""
    deadline = time.monotonic() + timeout
    last = write_requests(cluster)
    while time.monotonic() < deadline:
        time.sleep(settle)
        now = write_requests(cluster)
        if now == last:
            return now
        last = now
    raise AssertionError("the API server's write counters never settled")


def snapshot(objects, namespace, names):
    """Everything a dry run must leave alone in ``namespace``: resourceVersions, statuses, events."""
    statuses = {n: (objects.app(namespace, n) or {}).get("status") for n in names}
    events = sorted(e["metadata"]["name"] + "/" + str(e.get("count")) for e in objects.events(namespace))
    return objects.versions(namespace, names), statuses, events


def test_diff_right_after_a_sync_reports_nothing_despite_server_defaults(agent, repo, namespace, objects):
    repo.write("web.yaml", app_yaml("web", replicas=2))
    repo.write("api.yaml", app_yaml("api", port=9000))
    repo.commit()
    assert run(agent, "sync", repo, namespace).returncode == 0
    deployment = objects.deployment(namespace, "web")
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"  # a default Git never set
    proc = run(agent, "diff", repo, namespace)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("dry run, nothing written: no changes")
    assert "---" not in proc.stdout
    doc = schema_valid(json.loads(run(agent, "diff", repo, namespace, "-o", "json").stdout))
    assert (doc["exitCode"], doc["changes"], doc["counts"]["unchanged"], doc["dryRun"]) == (0, False, 6, True)
    assert run(agent, "sync", repo, namespace, "--dry-run").returncode == 0


def test_diff_shows_a_replicas_change_a_new_application_and_a_prune(agent, repo, namespace, objects):
    repo.write("web.yaml", app_yaml("web", replicas=1))
    repo.write("gone.yaml", app_yaml("gone"))
    repo.commit()
    assert run(agent, "sync", repo, namespace).returncode == 0
    before = objects.versions(namespace, ["web", "gone"])
    repo.write("web.yaml", app_yaml("web", replicas=3))
    repo.write("new.yaml", app_yaml("new", image="nginx:1.27"))
    repo.remove("gone.yaml")
    repo.commit("scale web, add new, remove gone")

    proc = run(agent, "diff", repo, namespace)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    web = out[out.index(f"--- live/Deployment/{namespace}/web"):]
    web = web[:web.index("\n---", 1) if "\n---" in web[1:] else len(web)]
    assert "-  replicas: 1\n" in web and "+  replicas: 3\n" in web
    assert "resourceVersion" not in out and "managedFields" not in out and "source-commit" not in out
    assert f"+++ desired/Application/{namespace}/new" in out and "+  image: nginx:1.27\n" in out
    assert f"+++ desired/Deployment/{namespace}/new" in out
    for kind in ("Application", "Deployment", "Service"):
        assert f"--- live/{kind}/{namespace}/gone" in out
    assert f"  Deployment/{namespace}/web update" in out and f"  Application/{namespace}/gone prune" in out
    assert objects.versions(namespace, ["web", "gone"]) == before  # nothing written

    doc = schema_valid(json.loads(run(agent, "diff", repo, namespace, "-o", "json").stdout))
    assert doc["exitCode"] == 1 and doc["changes"] and doc["commit"] == repo.head()
    actions = {o["subject"]: o["action"] for a in doc["applications"] for o in a["objects"]}
    assert actions[f"Deployment/{namespace}/web"] == "update" and actions[f"Application/{namespace}/new"] == "create"
    assert actions[f"Service/{namespace}/gone"] == "prune" and actions[f"Service/{namespace}/web"] == "unchanged"
    assert doc["counts"]["create"] == 3 and doc["counts"]["prune"] == 3

    md = run(agent, "diff", repo, namespace, "-o", "markdown").stdout
    assert md.startswith("### gitops-agent diff: changes pending")
    assert "| Application | Changes | Unchanged |" in md and f"| `{namespace}/new` | " in md
    assert f"<details><summary>Deployment/{namespace}/web (update)</summary>" in md and "```diff" in md

    dry = run(agent, "sync", repo, namespace, "--dry-run")
    assert dry.returncode == 1 and "---" not in dry.stdout and f"  Deployment/{namespace}/web update" in dry.stdout
    assert objects.versions(namespace, ["web", "gone"]) == before


def test_dry_run_writes_nothing_counted_on_the_api_server(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web", replicas=1))
    repo.write("gone.yaml", app_yaml("gone"))
    repo.commit()
    assert run(agent, "sync", repo, namespace).returncode == 0
    wait_for(lambda: (objects.deployment(namespace, "web")["status"].get("readyReplicas") or 0) == 1,
             what="the pod to be ready")
    assert run(agent, "sync", repo, namespace).returncode == 0  # status records readiness
    fresh_ns = f"ci-new-{uuid.uuid4().hex[:6]}"
    repo.write("web.yaml", app_yaml("web", replicas=4, image="nginx:1.27"))
    repo.write("other.yaml", app_yaml("other", namespace=fresh_ns))
    repo.remove("gone.yaml")
    repo.commit("changes of every kind")

    counters = quiet_write_requests(cluster)
    before = snapshot(objects, namespace, ["web", "gone"])
    for args in (["sync", "--dry-run"], ["sync", "--dry-run", "-o", "json"], ["diff"]):
        proc = run(agent, args[0], repo, namespace, *args[1:])
        assert proc.returncode == 1, proc.stderr
    assert write_requests(cluster) == counters
    assert snapshot(objects, namespace, ["web", "gone"]) == before
    assert cluster.kubectl("get", "namespace", fresh_ns, check=False).returncode != 0
    assert objects.app(namespace, "web")["status"]["lastSyncedCommit"] != repo.head()

    # the same pass for real writes, and afterwards a dry run finds nothing left to do
    proc = run(agent, "sync", repo, namespace, "-o", "json")
    try:
        doc = schema_valid(json.loads(proc.stdout))
        assert proc.returncode == 0 and doc["changes"] and not doc["dryRun"]
        assert objects.deployment(namespace, "web")["spec"]["replicas"] == 4
        assert write_requests(cluster) != counters
        assert run(agent, "sync", repo, namespace, "--dry-run").returncode == 0
    finally:
        cluster.kubectl("delete", "namespace", fresh_ns, "--wait=false", "--ignore-not-found", check=False)


def test_a_failed_diff_never_exits_1(agent, repo, namespace, tmp_path):
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    assert run(agent, "sync", repo, namespace).returncode == 0
    repo.write("web.yaml", app_yaml("web", replicas=2))
    repo.write("bad.yaml", app_yaml("bad", port=0))
    repo.commit("a change and a broken file")
    for command in (["diff"], ["sync", "--dry-run"], ["diff", "-o", "json"]):
        proc = run(agent, command[0], repo, namespace, *command[1:])
        assert proc.returncode == 2 and "bad.yaml" in proc.stderr
    doc = schema_valid(json.loads(proc.stdout))
    assert doc["changes"] and doc["exitCode"] == 2
    assert {"file": "bad.yaml", "line": 8, "field": "spec.port"}.items() <= doc["errors"][0].items()
    # no cluster at all: 2 with one line
    missing = tmp_path / "nope" / "kubeconfig"
    proc = agent.run([sys.executable, "-m", "agent", "diff", "--repo", str(repo.path), "--kubeconfig", str(missing)])
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "does not exist" in proc.stderr


@pytest.mark.parametrize("args,says", [
    (["diff", "-o", "yaml"], "argument -o/--output: 'yaml' is not allowed: must be one of text, json, markdown"),
    (["sync", "--output", "html"], "argument -o/--output: 'html' is not allowed"),
    (["diff", "--fetch-timeout", "x"], "--fetch-timeout: 'x' is not allowed"),
    (["diff"], "the following arguments are required: --repo"),
])
def test_bad_flags_are_one_line_exit_2(agent, args, says):
    proc = agent.run([sys.executable, "-m", "agent", *args])
    assert proc.returncode == 2 and says in proc.stderr and proc.stderr.count("\n") == 1


def test_help_documents_every_exit_code(agent):
    for command, codes in (("diff", ("0  nothing would change", "1  something would change", "2  failure")),
                           ("sync", ("0  success", "with --dry-run", "2  failure")),
                           ("validate", ("0  valid", "2  invalid"))):
        proc = agent.run([sys.executable, "-m", "agent", command, "--help"])
        assert proc.returncode == 0 and all(code in proc.stdout for code in codes), command


def _on_a_terminal(cmd: list[str]) -> str:
    """Run ``cmd`` with stdout and stderr on a pseudo-terminal; return everything it wrote."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_AGENT_")}
    proc = subprocess.Popen(cmd, stdout=follower, stderr=follower, stdin=subprocess.DEVNULL, cwd=ROOT, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode(errors="replace")


def test_progress_on_a_terminal_only_and_never_with_quiet(agent, repo, namespace):
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    base = [sys.executable, "-m", "agent", "diff", "--repo", str(repo.path), "--namespace", namespace,
            "--kubeconfig", str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir)]
    assert "API calls" in _on_a_terminal(base)
    assert "API calls" not in _on_a_terminal([*base, "--quiet"])
    piped = agent.run(base)
    assert "API calls" not in piped.stdout + piped.stderr


def test_sync_exit_codes_and_its_json_report(agent, repo, namespace):
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    proc = run(agent, "sync", repo, namespace, "--exit-code", "-o", "json")
    doc = schema_valid(json.loads(proc.stdout))
    assert proc.returncode == 1 and doc["exitCode"] == 1 and doc["changes"] and not doc["dryRun"]
    assert doc["counts"]["create"] == 3 and doc["timings"]["fetchSeconds"] is not None
    proc = run(agent, "sync", repo, namespace, "--exit-code")
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1].startswith("sync succeeded: 0 created")
    repo.write("web.yaml", app_yaml("web", port=-1))
    repo.commit("broken")
    proc = run(agent, "sync", repo, namespace, "-o", "markdown")
    assert proc.returncode == 2 and proc.stdout.startswith("### gitops-agent sync: failed")
    assert "- `web.yaml:8: spec.port`: must be an integer between 1 and 65535" in proc.stdout
