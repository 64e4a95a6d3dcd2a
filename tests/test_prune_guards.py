"""Prune guards against the real control plane: the ``heumsi.github.io/prune: disabled``
annotation on an Application and on a child, ``--max-prune-share``, and a refused file that
holds back only the prunes it could hide (``agent/engine/hidden.py``)."""

from __future__ import annotations

import sys

import pytest

from tests.support import app_yaml, wait_for

pytestmark = pytest.mark.usefixtures("crd")


def sync(agent, repo, namespace, *args, code=0, env=None):
    proc = agent.sync(repo.path, "--namespace", namespace, *args, env=env)
    assert proc.returncode == code, proc.stderr
    return proc


def test_annotated_application_is_kept_with_its_children_when_it_leaves_git(agent, repo, namespace, objects,
                                                                            cluster):
    repo.write("keep.yaml", app_yaml("keep"))
    repo.write("gone.yaml", app_yaml("gone"))
    repo.commit()
    sync(agent, repo, namespace)
    cluster.kubectl("-n", namespace, "annotate", "application", "keep", "heumsi.github.io/prune=disabled")
    repo.remove("keep.yaml")
    repo.remove("gone.yaml")
    repo.write("other.yaml", app_yaml("other"))
    head = repo.commit("remove both")
    proc = sync(agent, repo, namespace)
    assert f"Application/{namespace}/keep kept (not in Git; it has the annotation heumsi.github.io/prune: " \
           "disabled)" in proc.stdout
    assert all(objects.trio(namespace, "keep"))
    assert objects.trio(namespace, "gone") == (None, None, None)
    synced = {c["type"]: c for c in objects.app(namespace, "keep")["status"]["conditions"]}["Synced"]
    assert (synced["status"], synced["reason"]) == ("False", "PruneSkipped")
    assert synced["message"] == (f"no longer in Git at commit {head}; kept because it has the annotation "
                                 "heumsi.github.io/prune: disabled")
    # taking the annotation off lets the next pass prune it
    cluster.kubectl("-n", namespace, "annotate", "application", "keep", "heumsi.github.io/prune-")
    sync(agent, repo, namespace)
    assert objects.trio(namespace, "keep") == (None, None, None)


def test_annotated_child_survives_its_application_being_pruned(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web", replicas=0))
    repo.commit()
    sync(agent, repo, namespace)
    cluster.kubectl("-n", namespace, "annotate", "deployment", "web", "heumsi.github.io/prune=disabled")
    repo.remove("web.yaml")
    repo.write("other.yaml", app_yaml("other", replicas=0))
    repo.commit("remove web")
    proc = sync(agent, repo, namespace)
    assert f"Deployment/{namespace}/web kept (not in Git; heumsi.github.io/prune: disabled)" in proc.stdout
    assert f"Service/{namespace}/web pruned" in proc.stdout and f"Application/{namespace}/web pruned" in proc.stdout
    # deleted with propagationPolicy Orphan: gone once the garbage collector has orphaned its children
    wait_for(lambda: objects.app(namespace, "web") is None and objects.service(namespace, "web") is None,
             timeout=60, what="the pruned Application and Service to be gone")
    # the Application was deleted with propagationPolicy Orphan: the garbage collector drops the
    # kept Deployment's ownerReference instead of deleting it
    wait_for(lambda: not objects.deployment(namespace, "web")["metadata"].get("ownerReferences"),
             what="the kept Deployment to be orphaned")
    sync(agent, repo, namespace)  # no longer the agent's child: left alone
    assert objects.deployment(namespace, "web") is not None


def test_a_mass_prune_is_refused_until_max_prune_share_allows_it(agent, repo, namespace, objects):
    names = [f"app-{i:02d}" for i in range(12)]
    for name in names:
        repo.write(f"{name}.yaml", app_yaml(name, replicas=0))
    repo.commit()
    sync(agent, repo, namespace)
    for name in names[1:]:
        repo.remove(f"{name}.yaml")
    repo.write("app-00.yaml", app_yaml("app-00", replicas=0, image="nginx:1.27"))
    head = repo.commit("remove eleven of twelve")
    proc = sync(agent, repo, namespace, code=2)
    assert f"commit {head} would prune 11 of the 12 Applications this source owns" in proc.stderr
    assert "--max-prune-share 1.0" in proc.stderr and " 0 pruned," in proc.stdout
    assert all(all(objects.trio(namespace, name)) for name in names)
    # the rest of the pass applied: the change to the remaining Application is live
    assert objects.deployment(namespace, "app-00")["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "nginx:1.27"
    kept = {c["type"]: c for c in objects.app(namespace, "app-05")["status"]["conditions"]}["Synced"]
    assert (kept["reason"], kept["message"]) == (
        "PruneBlocked", f"no longer in Git at commit {head}; kept because pruning was blocked this pass")
    # a larger share that still refuses, then 1.0, which turns the guard off
    sync(agent, repo, namespace, "--max-prune-share", "0.9", code=2)
    proc = sync(agent, repo, namespace, env={"GITOPS_AGENT_MAX_PRUNE_SHARE": "1.0"})
    assert proc.stdout.count(f"Application/{namespace}/app-") == 12
    assert all(objects.trio(namespace, name) == (None, None, None) for name in names[1:])
    assert all(objects.trio(namespace, "app-00"))


def test_one_teams_refused_file_blocks_only_what_it_could_hide(agent, repo, namespace, objects):
    repo.write("team-a/x.yaml", app_yaml("x", replicas=0))
    repo.write("team-a/y.yaml", app_yaml("y", replicas=0))
    repo.write("team-b/b.yaml", app_yaml("b", replicas=0))
    repo.commit()
    sync(agent, repo, namespace)
    repo.write("team-b/broken.yaml", "kind: Application\nmetadata:\n  name: typo\nspec: [\n")  # does not parse
    repo.commit("team b: a typo")
    assert "team-b/broken.yaml:" in sync(agent, repo, namespace, code=2).stderr
    repo.remove("team-a/y.yaml")  # team a removes y: the typo came before, it cannot hide y
    repo.commit("team a: remove y")
    proc = sync(agent, repo, namespace, code=2)
    assert f"Application/{namespace}/y pruned" in proc.stdout and "pruning" not in proc.stdout
    assert objects.trio(namespace, "y") == (None, None, None)
    # x moved into the refused file in one commit: kept, and its status and explain name the file and line
    repo.remove("team-a/x.yaml")
    repo.write("team-b/broken.yaml", app_yaml("x", replicas=0) + "---\nkind: Application\nmetadata:\n"
               "  name: typo\nspec: [\n")
    head = repo.commit("team a: move x to team b")
    proc = sync(agent, repo, namespace, code=2)
    error = next(line for line in proc.stderr.splitlines() if "team-b/broken.yaml:" in line).removeprefix("error: ")
    assert error.startswith("team-b/broken.yaml:") and " 0 pruned," in proc.stdout
    assert all(objects.trio(namespace, "x")) and all(objects.trio(namespace, "b"))
    synced = {c["type"]: c for c in objects.app(namespace, "x")["status"]["conditions"]}["Synced"]
    assert synced["reason"] == "PruneBlocked"
    assert synced["message"].startswith(f"no longer in Git at commit {head}; kept because pruning was blocked: "
                                        f"{error}; that file changed since commit ")
    said = agent.run([sys.executable, "-m", "agent", "explain", "x", "-n", namespace, "--repo", str(repo.path),
                      "--kubeconfig", str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir)])
    assert said.stdout.splitlines()[0].startswith(f"Blocked: pruning held back by {error}; that file changed since")
