"""Several sources against one cluster. The source that holds an Application (its
``heumsi.github.io/source`` label) keeps it; another source whose Git has it too (another
``--path`` of one repository, another repository) refuses it with ``OwnershipConflict`` (exit 2),
writes nothing to it but its wanted-by annotation, and neither source prunes it while the other
still has it in Git. The hand-over is one ``kubectl label``. Two agents on overlapping paths reach
a fixed point. Real Git repositories in temporary directories, the real control plane."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from agent.engine.sources import wanted_by
from agent.source import mirror as source
from tests.cluster import free_port
from tests.support import GitRepo, app_yaml, wait_for
from tests.test_run import start_agent  # noqa: F401  (the fixture)
from tests.test_sync import container, sync_ok

pytestmark = pytest.mark.usefixtures("crd")

REPOSITORY = "heumsi.github.io/repository"
SOURCE = "heumsi.github.io/source"


def kept(app: dict, *, but: tuple = ()) -> dict:
    """What another source must never change on ``app``: labels, annotations (less the keys in
    ``but``: its own wanted-by annotation), spec, status and uid."""
    meta = app["metadata"]
    return {"labels": meta.get("labels"), "spec": app["spec"], "status": app.get("status"), "uid": meta["uid"],
            "annotations": {k: v for k, v in (meta.get("annotations") or {}).items() if k not in but}}


def children_uids(objects, namespace: str, name: str) -> tuple:
    return objects.deployment(namespace, name)["metadata"]["uid"], objects.service(namespace, name)["metadata"]["uid"]


def app_events(objects, namespace: str, name: str) -> list:
    return [e for e in objects.events(namespace)
            if e["involvedObject"]["kind"] == "Application" and e["involvedObject"]["name"] == name]


def conflict_line(stderr: str, namespace: str, name: str) -> str:
    """The refusal's line on stderr, without its ``error: Application/ns/name: `` prefix."""
    prefix = f"error: Application/{namespace}/{name}: "
    return next(x for x in stderr.splitlines() if x.startswith(prefix))[len(prefix):]


def hand_over(cluster, line: str) -> None:
    """Run the hand-over command a refusal names (its last part), as a user copies it."""
    command = line.rsplit(": ", 1)[1].split()
    assert command[0] == "kubectl", line
    cluster.kubectl(*command[1:])


def settled(agent, repo, namespace: str, objects, name: str, *args) -> None:
    """Wait for ``name``'s pod to be ready, then sync once more (the status records it), so no
    later pass writes for readiness."""
    wait_for(lambda: (objects.deployment(namespace, name)["status"].get("readyReplicas") or 0) >= 1,
             timeout=60, what=f"{name}'s pod to be ready")
    sync_ok(agent, repo, namespace, *args)


def synced(objects, namespace: str, name: str) -> dict:
    return next(c for c in objects.app(namespace, name)["status"]["conditions"] if c["type"] == "Synced")


@pytest.fixture
def other(tmp_path):
    """A second repository (B), next to the ``repo`` fixture (A)."""
    return GitRepo.create(tmp_path / "other")


def test_two_paths_of_one_repository_the_holder_keeps_it_the_other_refuses_and_passes_write_nothing(
        agent, repo, namespace, objects):
    repo.write("a/x.yaml", app_yaml("x", image="nginx:1"))
    repo.write("b/x.yaml", "# the same Application\n" + app_yaml("x", image="nginx:2"))
    repo.write("b/api.yaml", app_yaml("api"))
    repo.commit("x in two paths")
    a_id, b_id = source.source_id(str(repo.path), "a"), source.source_id(str(repo.path), "b")
    sync_ok(agent, repo, namespace, "--path", "a")
    settled(agent, repo, namespace, objects, "x", "--path", "a")
    before, uids, events = kept(objects.app(namespace, "x")), children_uids(objects, namespace, "x"), \
        app_events(objects, namespace, "x")

    proc = agent.sync(repo.path, "--namespace", namespace, "--path", "b")
    assert proc.returncode == 2, proc.stderr
    here = os.path.realpath(repo.path)
    assert conflict_line(proc.stderr, namespace, "x") == (
        f"b/x.yaml:2: OwnershipConflict: not applied: source '{a_id}' (repository '{here}', file 'a/x.yaml') holds "
        f"it; this source '{b_id}' (repository '{here}') has it too. This source leaves it, its status and its "
        "children as they are, and neither source prunes it while the other has it in Git. Keep it in one source "
        f"only, or hand it over to this one: kubectl -n {namespace} label application x {SOURCE}={b_id} --overwrite")
    assert f"1 Application failed: {namespace}/x" in proc.stdout
    app = objects.app(namespace, "x")
    assert app["metadata"]["annotations"][wanted_by(b_id)] == f"{b_id} b/x.yaml"  # its Git has it
    assert kept(app, but=(wanted_by(b_id),)) == before  # no apply, no status write
    assert children_uids(objects, namespace, "x") == uids
    assert container(objects.deployment(namespace, "x"))["image"] == "nginx:1"
    assert app_events(objects, namespace, "x") == events  # no Event on another source's Application
    assert objects.app(namespace, "api")["metadata"]["labels"][SOURCE] == b_id  # the rest of b syncs

    # a fixed point: further passes of either write nothing to x or its children
    versions, events = objects.versions(namespace, ["x"]), app_events(objects, namespace, "x")
    for _ in range(2):
        assert agent.sync(repo.path, "--namespace", namespace, "--path", "b").returncode == 2
        sync_ok(agent, repo, namespace, "--path", "a")
    assert objects.versions(namespace, ["x"]) == versions
    assert app_events(objects, namespace, "x") == events


def test_neither_path_prunes_it_while_the_other_has_it_and_the_hand_over_keeps_the_uids(
        agent, repo, namespace, objects, cluster):
    repo.write("a/x.yaml", app_yaml("x", image="nginx:1"))
    repo.write("a/db.yaml", app_yaml("db"))
    repo.write("b/x.yaml", app_yaml("x", image="nginx:2"))
    repo.commit("x in two paths")
    a_id, b_id = source.source_id(str(repo.path), "a"), source.source_id(str(repo.path), "b")
    sync_ok(agent, repo, namespace, "--path", "a")
    line = conflict_line(agent.sync(repo.path, "--namespace", namespace, "--path", "b").stderr, namespace, "x")
    uid, uids = objects.app(namespace, "x")["metadata"]["uid"], children_uids(objects, namespace, "x")

    repo.remove("a/x.yaml")  # the holder's Git drops it; b still has it: kept, not pruned
    repo.commit("x leaves a")
    proc = sync_ok(agent, repo, namespace, "--path", "a")
    handing = f"kubectl -n {namespace} label application x {SOURCE}={b_id} --overwrite"
    assert (f"Application/{namespace}/x kept (not in Git; source '{b_id}' ('b/x.yaml') still has it in Git; hand it "
            f"over to that source: {handing}, or remove it from that source)") in proc.stdout
    condition = synced(objects, namespace, "x")
    assert (condition["status"], condition["reason"]) == ("False", "PruneSkipped")
    assert f"source '{b_id}' ('b/x.yaml') still has it in Git" in condition["message"] and handing in condition["message"]
    assert agent.sync(repo.path, "--namespace", namespace, "--path", "b").returncode == 2  # nor does b prune it

    hand_over(cluster, line)  # the command of b's refusal
    proc = sync_ok(agent, repo, namespace, "--path", "b")
    app = objects.app(namespace, "x")
    assert (app["metadata"]["uid"], app["metadata"]["labels"][SOURCE]) == (uid, b_id)
    assert wanted_by(b_id) not in app["metadata"]["annotations"]  # it holds it now
    assert app["status"]["sourcePath"] == "b/x.yaml" and synced(objects, namespace, "x")["status"] == "True"
    assert container(objects.deployment(namespace, "x"))["image"] == "nginx:2"
    assert children_uids(objects, namespace, "x") == uids
    sync_ok(agent, repo, namespace, "--path", "a")  # a does not take it back or prune it
    assert objects.app(namespace, "x")["metadata"]["labels"][SOURCE] == b_id
    assert a_id != b_id and objects.app(namespace, "db")["metadata"]["labels"][SOURCE] == a_id


def test_two_repositories_the_second_refuses_and_neither_prunes_while_the_other_has_it(
        agent, repo, other, namespace, objects):
    repo.write("web.yaml", app_yaml("web", image="nginx:1"))
    repo.write("db.yaml", app_yaml("db"))
    repo.commit("web")
    a_id, b_id = source.source_id(str(repo.path)), source.source_id(str(other.path), "apps")
    sync_ok(agent, repo, namespace)
    first = objects.app(namespace, "web")
    assert first["metadata"]["annotations"][REPOSITORY] == os.path.realpath(repo.path)
    before, uids = kept(first), children_uids(objects, namespace, "web")

    other.write("apps/api.yaml", app_yaml("api"))
    other.write("apps/web.yaml", "# the same Application as in A\n" + app_yaml("web", image="evil:1"))
    other.commit("web too")
    proc = agent.sync(other.path, "--namespace", namespace, "--path", "apps")
    assert proc.returncode == 2, proc.stderr
    assert conflict_line(proc.stderr, namespace, "web") == (
        f"apps/web.yaml:2: OwnershipConflict: not applied: source '{a_id}' (repository "
        f"'{os.path.realpath(repo.path)}', file 'web.yaml') holds it; this source '{b_id}' (repository "
        f"'{os.path.realpath(other.path)}') has it too. This source leaves it, its status and its children as they "
        "are, and neither source prunes it while the other has it in Git. Keep it in one source only, or hand it "
        f"over to this one: kubectl -n {namespace} label application web {SOURCE}={b_id} --overwrite")
    assert kept(objects.app(namespace, "web"), but=(wanted_by(b_id),)) == before
    assert objects.app(namespace, "api")["status"]["lastSyncedCommit"] == other.head()
    doc = json.loads(agent.sync(other.path, "--namespace", namespace, "--path", "apps", "-o", "json").stdout)
    [web] = [a for a in doc["applications"] if a["name"] == f"{namespace}/web"]
    assert [(o["subject"], o["action"]) for o in web["objects"]] == [(f"Application/{namespace}/web", "failed")]
    assert web["objects"][0]["message"].startswith("apps/web.yaml:2: OwnershipConflict: ")

    repo.remove("web.yaml")  # A drops it while B has it: kept
    repo.commit("web leaves A")
    assert f"Application/{namespace}/web kept (not in Git; source '{b_id}'" in sync_ok(agent, repo, namespace).stdout
    assert children_uids(objects, namespace, "web") == uids
    other.remove("apps/web.yaml")  # B drops it too: it takes its annotation back and prunes nothing
    other.commit("web gone from B")
    proc = sync_ok(agent, other, namespace, "--path", "apps")
    assert " 0 pruned" in proc.stdout and wanted_by(b_id) not in objects.app(namespace, "web")["metadata"]["annotations"]
    sync_ok(agent, repo, namespace)  # now no source has it: its holder prunes it
    wait_for(lambda: objects.app(namespace, "web") is None, timeout=30, what="web to be pruned")


def test_the_hand_over_moves_an_application_between_repositories_with_the_old_source_still_having_it(
        agent, repo, other, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web", image="nginx:1"))
    repo.write("db.yaml", app_yaml("db"))
    repo.commit("web")
    a_id, b_id = source.source_id(str(repo.path)), source.source_id(str(other.path))
    sync_ok(agent, repo, namespace)
    uid, uids = objects.app(namespace, "web")["metadata"]["uid"], children_uids(objects, namespace, "web")
    other.write("web.yaml", app_yaml("web", image="nginx:2"))
    other.commit("web arrives in B")
    line = conflict_line(agent.sync(other.path, "--namespace", namespace).stderr, namespace, "web")
    hand_over(cluster, line)
    sync_ok(agent, other, namespace)
    app = objects.app(namespace, "web")
    assert (app["metadata"]["uid"], app["metadata"]["labels"][SOURCE]) == (uid, b_id)
    assert app["metadata"]["annotations"][REPOSITORY] == os.path.realpath(other.path)
    assert app["status"]["lastSyncedCommit"] == other.head()
    assert container(objects.deployment(namespace, "web"))["image"] == "nginx:2"
    assert children_uids(objects, namespace, "web") == uids
    # A still has it: now A refuses it, and B never prunes it while A has it
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    assert conflict_line(proc.stderr, namespace, "web").startswith(
        f"web.yaml:1: OwnershipConflict: not applied: source '{b_id}' (repository '{os.path.realpath(other.path)}', "
        "file 'web.yaml') holds it")
    other.remove("web.yaml")
    other.write("api.yaml", app_yaml("api"))
    other.commit("web leaves B")
    assert f"Application/{namespace}/web kept (not in Git; source '{a_id}'" in sync_ok(agent, other, namespace).stdout
    repo.remove("web.yaml")  # A gives it up too: its annotation goes, and A prunes nothing of B's
    repo.commit("web leaves A")
    sync_ok(agent, repo, namespace)
    assert wanted_by(a_id) not in objects.app(namespace, "web")["metadata"]["annotations"]
    assert children_uids(objects, namespace, "web") == uids


def test_one_repository_under_a_new_url_form_is_the_same_source_and_a_new_path_needs_the_hand_over(
        agent, repo, namespace, objects, cluster, tmp_path):
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.write("apps/api.yaml", app_yaml("api"))
    repo.commit("web")
    sync_ok(agent, repo, namespace, "--path", "apps")
    old = source.source_id(str(repo.path), "apps")
    uids = children_uids(objects, namespace, "web")
    link = tmp_path / "link-to-repo"
    link.symlink_to(repo.path)
    for url in (f"file://{repo.path}", str(link)):  # the same path under another URL form: the same source
        proc = agent.sync(url, "--namespace", namespace, "--path", "apps/")
        assert proc.returncode == 0, proc.stderr
        assert objects.app(namespace, "web")["metadata"]["labels"][SOURCE] == source.source_id(str(repo.path), "apps")
    # a changed --path is a new source id: it refuses until the Application is handed over
    proc = agent.sync(f"file://{repo.path}", "--namespace", namespace, "--path", ".")
    assert proc.returncode == 2
    new = source.source_id(f"file://{repo.path}", ".")
    assert conflict_line(proc.stderr, namespace, "web").endswith(
        f"kubectl -n {namespace} label application web {SOURCE}={new} --overwrite")
    assert f"2 Applications failed: {namespace}/api, {namespace}/web" in proc.stdout
    # every one at once (the guide's command, in this test's namespace instead of --all-namespaces)
    cluster.kubectl("label", "applications", "-n", namespace, "-l", f"{SOURCE}={old}", f"{SOURCE}={new}", "--overwrite")
    sync_ok(agent, repo, namespace)
    for name in ("web", "api"):
        app = objects.app(namespace, name)
        assert app["metadata"]["labels"][SOURCE] == new and app["status"]["lastSyncedCommit"] == repo.head()
        assert not [k for k in app["metadata"]["annotations"] if k.startswith("heumsi.github.io/wanted-by-")]
    assert children_uids(objects, namespace, "web") == uids  # taken over in place, never re-created
    # the source that holds it now prunes it when it leaves Git, as before
    repo.remove("apps/web.yaml")
    repo.write("apps/db.yaml", app_yaml("db"))
    repo.commit("web gone")
    assert agent.sync(str(link), "--namespace", namespace, "--path", ".").returncode == 0
    wait_for(lambda: objects.app(namespace, "web") is None, timeout=30, what="web to be pruned")


def test_a_gone_sources_annotation_removed_by_hand_lets_the_holder_prune(agent, repo, other, namespace, objects,
                                                                        cluster):
    repo.write("web.yaml", app_yaml("web"))
    repo.write("db.yaml", app_yaml("db"))
    repo.commit("web")
    sync_ok(agent, repo, namespace)
    other.write("web.yaml", app_yaml("web"))
    other.commit("web too")
    assert agent.sync(other.path, "--namespace", namespace).returncode == 2  # B records its annotation, then is gone
    key = wanted_by(source.source_id(str(other.path)))
    repo.remove("web.yaml")
    repo.commit("web leaves A")
    assert f"Application/{namespace}/web kept (not in Git; source " in sync_ok(agent, repo, namespace).stdout
    assert objects.app(namespace, "web") is not None
    cluster.kubectl("-n", namespace, "annotate", "application", "web", f"{key}-")
    sync_ok(agent, repo, namespace)
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


def test_two_agents_on_overlapping_paths_reach_a_fixed_point(repo, namespace, objects, start_agent):  # noqa: F811
    """Two ``run`` processes, one on the whole repository and one on ``apps`` inside it: the
    first to apply holds ``apps/web.yaml``'s Application, the other fails every pass on it, and
    after the first pass of each no pass writes to it or its children (resourceVersions, Events)."""
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.write("db.yaml", app_yaml("db"))
    repo.write("apps/api.yaml", app_yaml("api"))
    repo.commit("overlapping paths")
    flags = ("--interval", "1", "--namespace", namespace)
    whole = start_agent(str(repo.path), *flags, "--lease-name", "whole")
    wait_for(lambda: whole.metric("gitops_agent_passes_total", result="success") >= 1, timeout=60,
             what="the first pass of the agent on the whole repository")
    wait_for(lambda: (objects.deployment(namespace, "web")["status"].get("readyReplicas") or 0) >= 1
             and objects.app(namespace, "web")["status"].get("readyReplicas") == 1, timeout=60,
             what="web ready, and its status saying so")
    apps = start_agent(str(repo.path), *flags, "--path", "apps", "--lease-name", "apps", cache="cache-apps")
    wait_for(lambda: apps.metric("gitops_agent_passes_total", result="failure") >= 1, timeout=60,
             what="the first pass of the agent on apps")
    wait_for(lambda: wanted_by(source.source_id(str(repo.path), "apps"))
             in objects.app(namespace, "web")["metadata"]["annotations"], timeout=30, what="the wanted-by annotation")
    versions, events = objects.versions(namespace, ["web"]), app_events(objects, namespace, "web")
    passes = (whole.metric("gitops_agent_passes_total", result="success"),
              apps.metric("gitops_agent_passes_total", result="failure"))
    wait_for(lambda: whole.metric("gitops_agent_passes_total", result="success") >= passes[0] + 3
             and apps.metric("gitops_agent_passes_total", result="failure") >= passes[1] + 3, timeout=90,
             what="three more passes of each")
    assert objects.versions(namespace, ["web"]) == versions
    assert app_events(objects, namespace, "web") == events
    app = objects.app(namespace, "web")
    assert app["metadata"]["labels"][SOURCE] == source.source_id(str(repo.path))
    assert objects.app(namespace, "api")["metadata"]["labels"][SOURCE] == source.source_id(str(repo.path))
    assert apps.metric("gitops_agent_passes_total", result="success") == 0
    assert f"Application/{namespace}/web: apps/web.yaml:1: OwnershipConflict: not applied" in apps.output()
    assert whole.stop() == 0 and apps.stop() == 0


def passes(agent) -> float:
    """The passes ``agent`` (a RunningAgent) has finished, successful or not."""
    return sum(agent.metric("gitops_agent_passes_total", result=r) for r in ("success", "failure"))


class CreatesHeldTogether:
    """A validating admission webhook (HTTPS on loopback, a self-signed certificate) that
    answers the first create of the Application ``name`` only once a second one has arrived
    (at most ``wait`` s): two agents that both listed no such Application both get to create
    it, as they may when started at the same moment; the later apply wins. ``seen``: the names
    of the creates it was asked about, in order; ``broken``: True when the second never came."""

    def __init__(self, name: str, wait: float = 10.0):
        self.name, self.seen, self.broken = name, [], False
        self.barrier = threading.Barrier(2, timeout=wait)

    def review(self, request: dict) -> dict:
        name = request.get("name") or request["object"]["metadata"]["name"]
        self.seen.append(name)
        if name == self.name and not request.get("dryRun"):
            try:
                self.barrier.wait()
            except threading.BrokenBarrierError:
                self.broken = True
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": request["uid"], "allowed": True}}


@contextlib.contextmanager
def creates_held_together(cluster, namespace: str, name: str, tmp_path):
    """While inside: Application creates in ``namespace`` go through ``CreatesHeldTogether``
    (a ValidatingWebhookConfiguration, removed on the way out, as is the server). Yields it once
    the API server calls it (a dry-run create is seen)."""
    key, cert = tmp_path / "webhook.key", tmp_path / "webhook.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    held = CreatesHeldTogether(name)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answer = json.dumps(held.review(body["request"])).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
              "metadata": {"name": f"hold-{namespace}"},
              "webhooks": [{"name": "hold.tests.gitops-agent.example.com",
                            "clientConfig": {"url": f"https://127.0.0.1:{server.server_address[1]}/",
                                             "caBundle": base64.b64encode(cert.read_bytes()).decode()},
                            "rules": [{"apiGroups": ["heumsi.github.io"], "apiVersions": ["*"],
                                       "resources": ["applications"], "operations": ["CREATE"]}],
                            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                            "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 15,
                            "failurePolicy": "Fail"}]}
    text = yaml.safe_dump(config)
    cluster.kubectl("apply", "-f", "-", input=text)
    try:
        probe = app_yaml("probe", namespace=namespace)
        wait_for(lambda: cluster.kubectl("create", "--dry-run=server", "-f", "-", input=probe) and "probe" in held.seen,
                 timeout=30, what="the API server to call the webhook")
        yield held
    finally:
        cluster.kubectl("delete", "-f", "-", "--ignore-not-found", input=text)
        server.shutdown()
        server.server_close()


def test_two_agents_started_together_on_overlapping_paths_reach_a_fixed_point(
        repo, namespace, objects, start_agent, cluster, tmp_path):  # noqa: F811
    """Two ``run`` processes started at the same time, one on the whole repository and one on
    ``apps`` inside it, both creating ``apps/web.yaml``'s Application on their first pass:
    neither saw it held when it listed, and the API server answers their creates together
    (``creates_held_together``), so the later apply holds it. Once both have seen who holds
    what (the pass after the first) and the pods are ready, no pass of either writes to any of
    the Applications or their children (resourceVersions, Events), each contested Application
    has one holder, and the other refuses it on every pass."""
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.write("db.yaml", app_yaml("db"))
    repo.write("apps/api.yaml", app_yaml("api"))
    repo.commit("overlapping paths")
    names = ["web", "api", "db"]
    ids = {source.source_id(str(repo.path)): "whole", source.source_id(str(repo.path), "apps"): "apps"}
    flags = ("--interval", "1", "--namespace", namespace)
    with creates_held_together(cluster, namespace, "web", tmp_path) as held:
        agents = {"whole": start_agent(str(repo.path), *flags, "--lease-name", "whole", wait=False),
                  "apps": start_agent(str(repo.path), *flags, "--path", "apps", "--lease-name", "apps",
                                      cache="cache-apps", wait=False)}
        wait_for(lambda: all(passes(a) >= 1 for a in agents.values()), timeout=90, what="the first pass of each")
    assert held.seen.count("web") == 2 and not held.broken, held.seen  # both created it on their first pass
    wait_for(lambda: all(passes(a) >= 2 for a in agents.values()), timeout=60, what="two passes of each")
    wait_for(lambda: all((objects.app(namespace, n) or {}).get("status", {}).get("readyReplicas") == 1 for n in names),
             timeout=90, what="every Application ready, and its status saying so")
    done = {k: passes(a) for k, a in agents.items()}
    wait_for(lambda: all(passes(a) > done[k] for k, a in agents.items()), timeout=60,
             what="a pass of each after the statuses")
    versions = objects.versions(namespace, names)
    events = {n: app_events(objects, namespace, n) for n in names}
    done = {k: passes(a) for k, a in agents.items()}
    wait_for(lambda: all(passes(a) >= done[k] + 3 for k, a in agents.items()), timeout=90,
             what="three more passes of each")
    assert objects.versions(namespace, names) == versions
    assert {n: app_events(objects, namespace, n) for n in names} == events
    for name in ("web", "api"):  # one holder; the other refuses it on every pass
        holder = ids[objects.app(namespace, name)["metadata"]["labels"][SOURCE]]
        other = "apps" if holder == "whole" else "whole"
        assert (f"Application/{namespace}/{name}: apps/{name}.yaml:1: OwnershipConflict: not applied"
                in agents[other].output()), (name, holder)
    assert ids[objects.app(namespace, "db")["metadata"]["labels"][SOURCE]] == "whole"
    assert all(a.stop() == 0 for a in agents.values())
