"""Several sources against one cluster: an Application another repository syncs is never taken
over or pruned by a second repository; one repository under a new URL form is the same source,
and under a new ``--path`` (a new default source id) still takes its Applications over, as do
Applications without the repository annotation. Real Git repositories in temporary directories, the real control plane."""

from __future__ import annotations

import json
import os

import pytest

from agent.source import mirror as source
from tests.support import GitRepo, app_yaml, wait_for
from tests.test_run import start_agent  # noqa: F401  (the fixture)
from tests.test_sync import container, sync_ok

pytestmark = pytest.mark.usefixtures("crd")

REPOSITORY = "heumsi.github.io/repository"
SOURCE = "heumsi.github.io/source"


def kept(app: dict) -> dict:
    """What another source must never change on ``app``: labels, annotations, spec, status and
    its resourceVersion (which moves on any write, status included)."""
    meta = app["metadata"]
    return {"labels": meta.get("labels"), "annotations": meta.get("annotations"), "spec": app["spec"],
            "status": app.get("status"), "resourceVersion": meta["resourceVersion"], "uid": meta["uid"]}


def children_uids(objects, namespace: str, name: str) -> tuple:
    return objects.deployment(namespace, name)["metadata"]["uid"], objects.service(namespace, name)["metadata"]["uid"]


def app_events(objects, namespace: str, name: str) -> list:
    return [e for e in objects.events(namespace)
            if e["involvedObject"]["kind"] == "Application" and e["involvedObject"]["name"] == name]


@pytest.fixture
def other(tmp_path):
    """A second repository (B), next to the ``repo`` fixture (A)."""
    return GitRepo.create(tmp_path / "other")


def test_a_second_repository_never_takes_over_or_prunes_the_first_ones_application(
        agent, repo, other, namespace, objects):
    repo.write("web.yaml", app_yaml("web", image="nginx:1"))
    head = repo.commit("web")
    sync_ok(agent, repo, namespace)
    first = objects.app(namespace, "web")
    assert first["metadata"]["annotations"][REPOSITORY] == os.path.realpath(repo.path)
    assert first["metadata"]["labels"][SOURCE] == source.source_id(str(repo.path))
    before, uids, events = kept(first), children_uids(objects, namespace, "web"), app_events(objects, namespace, "web")

    other.write("apps/db.yaml", app_yaml("db"))
    other.write("apps/web.yaml", "# the same Application as in A\n" + app_yaml("web", image="evil:1"))
    other.commit("web too")
    proc = agent.sync(other.path, "--namespace", namespace, "--path", "apps")
    assert proc.returncode == 2, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if x.startswith(f"error: Application/{namespace}/web: "))
    assert line == (
        f"error: Application/{namespace}/web: apps/web.yaml:2: not applied: already synced from another repository, "
        f"'{os.path.realpath(repo.path)}' ({SOURCE}={source.source_id(str(repo.path))}); this source leaves it, "
        "its status and its children as they are and never prunes it. Remove it from one of the two repositories, "
        f"or hand it over to this one: kubectl -n {namespace} annotate application web {REPOSITORY}- (taken at "
        "this source's next pass, unless the other source applies it again first)")
    assert f"1 Application failed: {namespace}/web" in proc.stdout
    assert kept(objects.app(namespace, "web")) == before  # no apply, no status write
    assert children_uids(objects, namespace, "web") == uids
    assert container(objects.deployment(namespace, "web"))["image"] == "nginx:1"
    assert app_events(objects, namespace, "web") == events  # no Event on another source's Application
    db = objects.app(namespace, "db")  # the rest of B syncs
    assert db["metadata"]["annotations"][REPOSITORY] == os.path.realpath(other.path)
    assert db["status"]["lastSyncedCommit"] == other.head()

    proc = agent.sync(other.path, "--namespace", namespace, "--path", "apps", "-o", "json")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    [web] = [a for a in doc["applications"] if a["name"] == f"{namespace}/web"]
    assert [(o["subject"], o["action"]) for o in web["objects"]] == [(f"Application/{namespace}/web", "failed")]

    other.remove("apps/web.yaml")  # B gives its copy up: nothing of A's is pruned
    other.commit("web gone from B")
    proc = sync_ok(agent, other, namespace, "--path", "apps")
    assert "pruned" not in proc.stdout.replace(" 0 pruned", "")
    assert kept(objects.app(namespace, "web")) == before
    assert children_uids(objects, namespace, "web") == uids
    proc = sync_ok(agent, repo, namespace)  # and A still has it, in sync
    assert objects.app(namespace, "web")["status"]["lastSyncedCommit"] == head
    assert children_uids(objects, namespace, "web") == uids


def test_one_repository_under_a_new_url_form_or_path_takes_its_applications_over(
        agent, repo, namespace, objects, tmp_path):
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit("web")
    sync_ok(agent, repo, namespace, "--path", "apps")
    uids = children_uids(objects, namespace, "web")
    link = tmp_path / "link-to-repo"
    link.symlink_to(repo.path)
    notes = []
    for url, path in ((f"file://{repo.path}", "apps"), (f"file://{repo.path}", "."), (str(link), "apps/")):
        before = objects.app(namespace, "web")["metadata"]["labels"][SOURCE]
        proc = agent.sync(url, "--namespace", namespace, "--path", path)
        assert proc.returncode == 0, proc.stderr
        app = objects.app(namespace, "web")
        assert app["metadata"]["labels"][SOURCE] == source.source_id(url, path)  # a new one for a new path
        taken = f"note: 1 Application taken over from source {before!r} ({namespace}/web): it synced them under another --path"
        assert (taken in proc.stdout) == (before != source.source_id(url, path)), proc.stdout
        notes.append(taken in proc.stdout)
        assert app["metadata"]["annotations"][REPOSITORY] == os.path.realpath(repo.path)  # one repository
        assert app["status"]["lastSyncedCommit"] == repo.head()
    assert notes == [False, True, True]  # the same path under another URL form is the same source
    assert children_uids(objects, namespace, "web") == uids  # taken over in place, never re-created
    # the source that holds it now prunes it when it leaves Git, as before
    repo.remove("apps/web.yaml")
    repo.write("apps/db.yaml", app_yaml("db"))
    repo.commit("web gone")
    assert agent.sync(str(link), "--namespace", namespace, "--path", "apps/").returncode == 0
    wait_for(lambda: objects.app(namespace, "web") is None, timeout=30, what="web to be pruned")


def test_a_new_spelling_of_the_repository_is_the_same_source_and_prunes_what_left_git(
        agent, repo, namespace, objects):
    """Switching ``--repo`` from a path to a ``file://`` URL with a trailing slash (or, remotely,
    ``https://`` to ``ssh://``, with or without ``.git``) in the same change that removes an
    Application: the source is the same, so the Application is pruned, not left behind."""
    repo.write("web.yaml", app_yaml("web"))
    repo.write("db.yaml", app_yaml("db"))
    repo.commit("web and db")
    sync_ok(agent, repo, namespace)
    assert objects.app(namespace, "db")["metadata"]["labels"][SOURCE] == source.source_id(str(repo.path))
    repo.remove("db.yaml")
    repo.commit("db gone")
    for url in (f"file://{repo.path}/", f"file://{repo.path}//"):
        assert source.source_id(url) == source.source_id(str(repo.path))
    proc = agent.sync(f"file://{repo.path}/", "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    wait_for(lambda: objects.app(namespace, "db") is None, timeout=30, what="db to be pruned")
    assert objects.app(namespace, "web")["metadata"]["labels"][SOURCE] == source.source_id(str(repo.path))


def test_an_application_without_the_repository_annotation_is_taken_over(agent, repo, other, namespace, objects,
                                                                      cluster):
    """An Application an older agent applied (no annotation), which is also the documented hand-over:
    removing the annotation lets the other repository's source take it; the first then refuses it
    and, once its copy is gone, prunes nothing."""
    repo.write("web.yaml", app_yaml("web", image="nginx:1"))
    repo.commit("web")
    sync_ok(agent, repo, namespace)
    uids = children_uids(objects, namespace, "web")
    cluster.kubectl("-n", namespace, "annotate", "application", "web", f"{REPOSITORY}-")
    other.write("web.yaml", app_yaml("web", image="nginx:2"))
    other.commit("web moves to B")
    sync_ok(agent, other, namespace)
    app = objects.app(namespace, "web")
    assert app["metadata"]["labels"][SOURCE] == source.source_id(str(other.path))
    assert app["metadata"]["annotations"][REPOSITORY] == os.path.realpath(other.path)
    assert container(objects.deployment(namespace, "web"))["image"] == "nginx:2"
    assert children_uids(objects, namespace, "web") == uids
    before = kept(app)
    proc = agent.sync(repo.path, "--namespace", namespace)  # A now refuses it, naming B
    assert proc.returncode == 2
    assert f"Application/{namespace}/web: web.yaml:1: not applied: already synced from another repository, " \
           f"'{os.path.realpath(other.path)}'" in proc.stderr
    repo.remove("web.yaml")
    repo.write("db.yaml", app_yaml("db"))
    repo.commit("web left A")
    sync_ok(agent, repo, namespace)
    assert kept(objects.app(namespace, "web")) == before and children_uids(objects, namespace, "web") == uids


def test_hand_applied_copies_and_a_shared_source_id_are_taken_over_as_before(agent, repo, other, namespace,
                                                                           objects, cluster, tmp_path):
    # a hand-applied Application, labels and annotation copied from another source's: not the agent's
    hand = tmp_path / "hand.yaml"
    hand.write_text(app_yaml("hand", namespace=namespace).replace(
        "metadata:\n", f"metadata:\n  labels: {{{SOURCE}: src-elsewhere, app.kubernetes.io/managed-by: gitops-agent}}\n"
        f"  annotations: {{{REPOSITORY}: github.com/org/elsewhere}}\n", 1))
    cluster.kubectl("apply", "-f", str(hand))
    repo.write("hand.yaml", app_yaml("hand"))
    repo.write("web.yaml", app_yaml("web"))
    repo.commit("hand and web")
    sync_ok(agent, repo, namespace, "--source-id", "shared")
    assert objects.app(namespace, "hand")["metadata"]["labels"][SOURCE] == "shared"
    # two repositories given one --source-id are one source, as before: the later apply wins
    other.write("web.yaml", app_yaml("web", image="nginx:2"))
    other.commit("web")
    sync_ok(agent, other, namespace, "--source-id", "shared")
    app = objects.app(namespace, "web")
    assert (app["metadata"]["labels"][SOURCE], app["metadata"]["annotations"][REPOSITORY]) == \
        ("shared", os.path.realpath(other.path))
    assert container(objects.deployment(namespace, "web"))["image"] == "nginx:2"


def test_run_refuses_another_repositorys_application_every_pass_and_writes_nothing(
        agent, repo, other, namespace, objects, start_agent):  # noqa: F811
    repo.write("web.yaml", app_yaml("web"))
    repo.commit("web")
    sync_ok(agent, repo, namespace)
    before = kept(objects.app(namespace, "web"))
    other.write("web.yaml", app_yaml("web", image="evil:1"))
    other.write("db.yaml", app_yaml("db"))
    other.commit("web too")
    running = start_agent(str(other.path), "--interval", "1", "--namespace", namespace)
    wait_for(lambda: running.metric("gitops_agent_passes_total", result="failure") >= 3, timeout=60,
             what="three failed passes")
    assert objects.app(namespace, "db")["status"]["lastSyncedCommit"] == other.head()
    assert kept(objects.app(namespace, "web")) == before
    sync_ok(agent, repo, namespace)  # A's own pass (a status write wakes B's watch) changes nothing either
    wait_for(lambda: running.metric("gitops_agent_passes_total", result="failure") >= 5, timeout=60,
             what="two more failed passes")
    assert kept(objects.app(namespace, "web"))["spec"] == before["spec"]
    assert objects.app(namespace, "web")["metadata"]["labels"][SOURCE] == before["labels"][SOURCE]
    assert running.metric("gitops_agent_passes_total", result="success") == 0
    assert f"Application/{namespace}/web: web.yaml:1: not applied" in running.output()
    assert running.stop() == 0


def test_the_careful_hand_over_keeps_the_application_and_its_children(agent, repo, other, namespace, objects,
                                                                      cluster):
    """README's hand-over with the old source still running: prune=disabled, remove it from the
    old repository (kept, not pruned), remove the repository annotation, the new source takes it."""
    repo.write("web.yaml", app_yaml("web"))
    repo.write("db.yaml", app_yaml("db"))
    repo.commit("web")
    sync_ok(agent, repo, namespace)
    uids = children_uids(objects, namespace, "web")
    uid = objects.app(namespace, "web")["metadata"]["uid"]
    cluster.kubectl("-n", namespace, "annotate", "application", "web", "heumsi.github.io/prune=disabled")
    repo.remove("web.yaml")
    repo.commit("web leaves A")
    assert "kept" in sync_ok(agent, repo, namespace).stdout
    cluster.kubectl("-n", namespace, "annotate", "application", "web", f"{REPOSITORY}-")
    sync_ok(agent, repo, namespace)  # A does not put it back: not in its Git any more
    assert REPOSITORY not in objects.app(namespace, "web")["metadata"]["annotations"]
    other.write("web.yaml", app_yaml("web", image="nginx:2"))
    other.commit("web arrives in B")
    sync_ok(agent, other, namespace)
    cluster.kubectl("-n", namespace, "annotate", "application", "web", "heumsi.github.io/prune-")
    sync_ok(agent, repo, namespace)  # A leaves B's Application alone now
    app = objects.app(namespace, "web")
    assert (app["metadata"]["uid"], app["metadata"]["labels"][SOURCE]) == (uid, source.source_id(str(other.path)))
    assert app["status"]["lastSyncedCommit"] == other.head()
    assert children_uids(objects, namespace, "web") == uids
    assert container(objects.deployment(namespace, "web"))["image"] == "nginx:2"
