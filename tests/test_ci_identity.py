"""CI and the in-cluster agent share a repository (issue 46, items 1 and 3), against the real
control plane: ``run`` syncs a bare repository served by URL (``git daemon``); CI's checkout of
it (``origin`` set) is the same source, so ``diff --repo CHECKOUT`` shows only real changes and
never ``OwnershipConflict``; ``sync --once --wait -l team=a`` waits for team a alone and exits 0
while team b's Application is broken."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from tests.cluster import FAIL_LABEL
from tests.support import app_yaml, wait_for
from tests.test_run import git_daemon, remote, start_agent  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("crd")
REPOSITORY = "heumsi.github.io/repository"
SOURCE = "heumsi.github.io/source"


def team(name: str, owner: str, image: str = "nginx:1.27", broken: bool = False) -> str:
    doc = yaml.safe_load(app_yaml(name, image=image))
    doc["metadata"]["labels"] = {"team": owner}
    if broken:  # the fake node fails to pull its image (tests/cluster FAIL_LABEL); Degraded after 10 s
        doc["spec"]["podLabels"] = {FAIL_LABEL: "image-pull"}
        doc["spec"]["rollout"] = {"failAfterSeconds": 10}
    return yaml.safe_dump(doc, sort_keys=False)


def command(agent, name: str, repo, namespace: str, *args: str, timeout: float = 120):
    return agent.run([sys.executable, "-m", "agent", name, "--repo", str(repo), "--namespace", namespace,
                      "--kubeconfig", str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), *args],
                     timeout=timeout)


def changed(doc: dict) -> dict[str, list[str]]:
    """Application -> the subjects the report says would change."""
    out: dict[str, list[str]] = {}
    for app in doc["applications"]:
        for obj in app["objects"]:
            if obj["action"] not in ("unchanged", "kept"):
                out.setdefault(app["name"], []).append(f"{obj['subject']} {obj['action']}")
    return out


def test_a_ci_checkout_of_the_served_repository_is_the_same_source(
        start_agent, agent, repo, remote, git_daemon, namespace, objects, tmp_path):  # noqa: F811
    repo.write("a/web.yaml", team("web", "a"))
    repo.write("b/api.yaml", team("api", "b"))
    head = remote.push()
    start_agent(git_daemon, "--interval", "300", "--namespace", namespace)  # the in-cluster agent, on the URL

    def synced() -> bool:
        apps = [objects.app(namespace, n) for n in ("web", "api")]
        return all(a and (a.get("status") or {}).get("lastSyncedCommit") == head for a in apps)

    wait_for(synced, timeout=60, what="run's first pass")
    identity = git_daemon.removeprefix("git://").removesuffix(".git")  # 127.0.0.1:PORT/remote
    live = objects.app(namespace, "web")["metadata"]
    assert live["annotations"][REPOSITORY] == identity

    ci = tmp_path / "ci"  # what actions/checkout leaves: a clone with origin set to the URL
    subprocess.run(["git", "clone", "-q", git_daemon, str(ci)], check=True, capture_output=True)
    proc = command(agent, "diff", ci, namespace, "-o", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert "OwnershipConflict" not in proc.stdout + proc.stderr and doc["ok"] and changed(doc) == {}

    (ci / "a" / "web.yaml").write_text(team("web", "a", image="nginx:1.28"))  # a pull request's change
    subprocess.run(["git", "-C", str(ci), "-c", "user.email=ci@example.com", "-c", "user.name=CI", "commit", "-qam",
                    "web: nginx 1.28"], check=True, capture_output=True)
    proc = command(agent, "diff", ci, namespace, "-o", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1, proc.stderr
    assert changed(doc) == {f"{namespace}/web": [f"Application/{namespace}/web update",
                                                 f"Deployment/{namespace}/web update"]}, doc
    assert doc["ok"] and not doc["errors"]

    proc = command(agent, "sync", ci, namespace, "--once")  # CI syncs the checkout: no conflict, one source
    assert proc.returncode == 0, proc.stderr
    live = objects.app(namespace, "web")["metadata"]
    assert (live["annotations"][REPOSITORY], live["labels"][SOURCE]) == \
        (identity, objects.app(namespace, "api")["metadata"]["labels"][SOURCE])


def test_a_path_synced_before_the_upgrade_is_taken_over_by_its_origin(agent, repo, remote, namespace, objects,
                                                                      tmp_path):  # noqa: F811
    """An install that synced a checkout recorded its path (as this agent does for a checkout with no
    origin, and did before issue 46 for every checkout). With origin set, the checkout is the
    origin: the first pass relabels each Application once (no child written) and prunes what left Git,
    then nothing changes."""
    repo.write("web.yaml", team("web", "a"))
    repo.write("old.yaml", team("old", "a"))
    remote.push()
    ci = tmp_path / "ci"
    subprocess.run(["git", "clone", "-q", remote.url, str(ci)], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(ci), "remote", "rename", "origin", "upstream"], check=True)
    proc = command(agent, "sync", ci, namespace, "--once")  # no origin: the path, as before issue 46
    assert proc.returncode == 0, proc.stderr
    before = objects.app(namespace, "web")
    assert before["metadata"]["annotations"][REPOSITORY] == str(ci.resolve())
    children = {k: v for k, v in objects.versions(namespace, ["web"]).items() if not k.startswith("Application")}
    subprocess.run(["git", "-C", str(ci), "remote", "rename", "upstream", "origin"], check=True)
    subprocess.run(["git", "-C", str(ci), "-c", "user.email=ci@example.com", "-c", "user.name=CI", "rm", "-q",
                    "old.yaml"], check=True)
    subprocess.run(["git", "-C", str(ci), "-c", "user.email=ci@example.com", "-c", "user.name=CI", "commit", "-qm",
                    "old: removed"], check=True)
    proc = command(agent, "sync", ci, namespace, "--once", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert {k: sorted(v) for k, v in changed(json.loads(proc.stdout)).items()} == {
        f"{namespace}/web": [f"Application/{namespace}/web update"],
        f"{namespace}/old": [f"Application/{namespace}/old prune", f"Deployment/{namespace}/old prune",
                             f"Service/{namespace}/old prune"]}  # the old id's, gone from Git: pruned
    assert objects.app(namespace, "old") is None
    after = objects.app(namespace, "web")
    assert after["metadata"]["annotations"][REPOSITORY] == str(remote.path.resolve())
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"]["labels"][SOURCE] != before["metadata"]["labels"][SOURCE]
    assert {k: v for k, v in objects.versions(namespace, ["web"]).items() if not k.startswith("Application")} == \
        children  # no child written: no pod restarts
    proc = command(agent, "sync", ci, namespace, "--once", "--exit-code")  # nothing left to change
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_sync_wait_for_team_a_ends_0_while_team_b_is_broken(agent, repo, namespace, objects):
    repo.write("a/web.yaml", team("web", "a"))
    repo.write("b/api.yaml", team("api", "b", image="registry.invalid/api:nope", broken=True))
    repo.commit()
    proc = command(agent, "sync", repo.path, namespace, "--once", "--wait", "60", "-l", "team=a", timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert "waiting up to " in proc.stderr and "for 1 Application (-l team=a) to be healthy" in proc.stderr
    assert f"{namespace}/api" not in proc.stdout.splitlines()[-1]
    proc = command(agent, "sync", repo.path, namespace, "--once", "--wait", "60", timeout=90)  # everyone's: b fails
    assert proc.returncode == 1 and f"{namespace}/api" in proc.stdout
    proc = command(agent, "sync", repo.path, namespace, "--once", "--wait", "60", "--app", "web", timeout=90)
    assert proc.returncode == 0, proc.stderr
    proc = command(agent, "sync", repo.path, namespace, "--once", "--wait", "5", "-l", "team=c")
    assert proc.returncode == 2
    assert proc.stdout.splitlines()[-1] == (f"wait failed: -l 'team=c' matches none of the 2 Applications this pass "
                                            "synced from Git: nothing to wait for")


def test_reconcile_wait_for_team_a_ends_0_while_team_b_is_broken(
        start_agent, agent, repo, remote, namespace, objects):  # noqa: F811
    repo.write("a/web.yaml", team("web", "a"))
    repo.write("b/api.yaml", team("api", "b", image="registry.invalid/api:nope", broken=True))
    remote.push()
    start_agent(remote.url, "--interval", "300", "--namespace", namespace)
    wait_for(lambda: objects.app(namespace, "web") and objects.app(namespace, "api"), timeout=60,
             what="run's first pass")

    def reconcile(*args: str, timeout: float = 120):
        return agent.run([sys.executable, "-m", "agent", "reconcile", *args, "-n", namespace,
                          "--kubeconfig", str(agent.kubeconfig)], timeout=timeout)

    proc = reconcile("-l", "team=a", "--wait", "--timeout", "90")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"Application/{namespace}/web: sync requested (") and len(lines) == 3
    assert lines[2].startswith(f"Application/{namespace}/web: healthy: Ready=True")
    assert "heumsi.github.io/reconcile-requested-at" not in objects.app(namespace, "api")["metadata"].get(
        "annotations", {})  # team b was not asked
    proc = reconcile("-l", "team=c")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.strip().splitlines() == [
        f"error: no Application in namespace {namespace} matches -l 'team=c': nothing to reconcile"]
    proc = reconcile("web", "api", "--wait", "--timeout", "60", timeout=90)  # both named: the worst, api's
    assert proc.returncode == 1, proc.stderr
    assert f"Application/{namespace}/web: healthy: " in proc.stdout
    assert f"Application/{namespace}/api: Degraded or Stalled, waiting cannot help" in proc.stderr
