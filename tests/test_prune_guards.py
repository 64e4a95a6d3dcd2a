"""Prune guards against the real control plane: the ``heumsi.github.io/prune: disabled``
annotation on an Application and on a child, and ``--max-prune-share``."""

from __future__ import annotations

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
