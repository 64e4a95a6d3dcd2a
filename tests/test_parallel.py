"""Parallel writes change nothing but speed: the same repository synced with --concurrency 1 and
with --concurrency 16 (into two namespaces, as two sources) leaves the same objects, the same
statuses, the same report (counts, order, errors) and at most one Event per Application per pass.

The scenario has every kind of write: creates, updates, a hand-edited child put back, a
recreate on an immutable field, prunes, and an Application that fails (its Deployment name is
taken by a hand-made object with another selector)."""

from __future__ import annotations

import json
import sys

import pytest

from tests.support import app_yaml, wait_for
from tests.test_drift import _older_agents_deployment

pytestmark = pytest.mark.usefixtures("crd")
APPS = 16
SERIAL, PARALLEL = 1, 16
TIME_KEYS = ("lastTransitionTime", "lastSyncTime", "lastSyncedTime", "nextRetryTime", "firstSyncedAt", "lastSyncedAt",
             "observedAt")  # nextRetryTime: when the pass ran, jittered


def sync(agent, repo, namespace, concurrency):
    """One ``sync --once`` pass; the serial one also renders and applies children one
    Application at a time (``childapply.CHILD_BATCH`` 1: a batch boundary between every two), the
    parallel one in the default batches, so the comparison covers batching too."""
    args = ["sync", "--once", "--repo", str(repo.path), "--kubeconfig", str(agent.kubeconfig), "--cache-dir",
            str(agent.cache_dir), "--namespace", namespace, "--source-id", f"par-{concurrency}",
            "--concurrency", str(concurrency), "-o", "json"]
    batch = "import agent.engine.childapply; agent.engine.childapply.CHILD_BATCH = 1; " if concurrency == SERIAL else ""
    proc = agent.run([sys.executable, "-c", f"import sys; {batch}from agent.cli import main as cli; sys.exit(cli.main({args!r}))"],
                     timeout=300)
    return proc.returncode, json.loads(proc.stdout)


def normal(value, namespace, concurrency):
    """``value`` as JSON text with the run's namespace and source id replaced by placeholders."""
    return json.loads(json.dumps(value).replace(namespace, "NS").replace(f"par-{concurrency}", "SRC"))


def report_view(doc, namespace, concurrency):
    doc = normal(doc, namespace, concurrency)
    return {k: doc[k] for k in ("ok", "changes", "commit", "applications", "errors", "notes", "counts")}


def untimed(value):
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIME_KEYS}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def cluster_view(objects, namespace, concurrency):
    """Every Application, Deployment and Service in ``namespace``: spec, labels, annotations,
    ownerReferences (without uid) and, for Applications, status without times."""
    api = objects.api_client
    items = [("Application", a) for a in objects.custom.list_namespaced_custom_object(
        "heumsi.github.io", "v1", namespace, "applications")["items"]]
    items += [("Deployment", api.sanitize_for_serialization(d)) for d in objects.apps.list_namespaced_deployment(namespace).items]
    items += [("Service", api.sanitize_for_serialization(s)) for s in objects.core.list_namespaced_service(namespace).items]
    out = {}
    for kind, obj in items:
        meta = obj["metadata"]
        spec = dict(obj.get("spec") or {})
        for noisy in ("clusterIP", "clusterIPs"):  # allocated by the API server
            spec.pop(noisy, None)
        out[f"{kind}/{meta['name']}"] = {
            "spec": spec, "labels": meta.get("labels"), "annotations": meta.get("annotations"),
            "ownerReferences": [{k: v for k, v in ref.items() if k != "uid"} for ref in meta.get("ownerReferences") or []],
            "status": untimed(obj.get("status")) if kind == "Application" else None,
        }
    return normal(out, namespace, concurrency)


def settled(objects, namespace):
    """The Deployment controller has observed every Deployment (health reads its status)."""
    wait_for(lambda: all((d.status.observed_generation or 0) >= d.metadata.generation
                         for d in objects.apps.list_namespaced_deployment(namespace).items),
             timeout=120, what=f"Deployments in {namespace} to be observed")


def taken(cluster, namespace, tmp_path):
    """A hand-made Deployment ``taken`` (its Application fails: OwnershipConflict, never applied over)."""
    manifest = tmp_path / f"taken-{namespace}.json"
    manifest.write_text(json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "taken", "namespace": namespace},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"hand": "made"}},
                 "template": {"metadata": {"labels": {"hand": "made"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}))
    cluster.kubectl("apply", "-f", str(manifest))


def test_serial_and_parallel_passes_leave_the_same_objects_statuses_and_reports(
        agent, repo, namespaces, objects, cluster, tmp_path):
    runs = {SERIAL: namespaces("ser"), PARALLEL: namespaces("par")}
    for i in range(APPS):
        repo.write(f"apps/app{i:02d}.yaml", app_yaml(f"app{i:02d}", image="nginx:1", replicas=0))
    for name in ("gone1", "gone2"):
        repo.write(f"apps/{name}.yaml", app_yaml(name, replicas=0))
    repo.write("apps/web.yaml", app_yaml("web", image="nginx:1.27", replicas=0))
    repo.write("apps/taken.yaml", app_yaml("taken", replicas=0))
    repo.commit("first")
    reports = {}
    for concurrency, namespace in runs.items():
        taken(cluster, namespace, tmp_path)
        reports[concurrency] = [sync(agent, repo, namespace, concurrency)]
        assert reports[concurrency][0][0] == 2  # taken failed; the others synced

    # hand edits, the same in both namespaces: a scaled child, and an older selector for web
    for concurrency, namespace in runs.items():
        cluster.kubectl("-n", namespace, "scale", "deployment", "app03", "--replicas=2")
        (tmp_path / namespace).mkdir()
        _older_agents_deployment(cluster, objects, namespace, tmp_path / namespace)
    for i in (5, 6, 7):
        repo.write(f"apps/app{i:02d}.yaml", app_yaml(f"app{i:02d}", image="nginx:2", replicas=0))
    repo.write("apps/web.yaml", app_yaml("web", image="nginx:1.27", replicas=1))
    repo.remove("apps/gone1.yaml")
    repo.remove("apps/gone2.yaml")
    repo.commit("second")
    for concurrency, namespace in runs.items():
        reports[concurrency].append(sync(agent, repo, namespace, concurrency))
    for concurrency, namespace in runs.items():
        settled(objects, namespace)
        reports[concurrency].append(sync(agent, repo, namespace, concurrency))  # status from settled health

    serial = [(code, report_view(doc, runs[SERIAL], SERIAL)) for code, doc in reports[SERIAL]]
    parallel = [(code, report_view(doc, runs[PARALLEL], PARALLEL)) for code, doc in reports[PARALLEL]]
    assert parallel == serial
    second = serial[1][1]
    assert (second["counts"]["prune"], second["counts"]["recreate"], second["counts"]["update"]) == (6, 1, 8)  # 3 image bumps (Application and Deployment), app03 put back, web
    assert cluster_view(objects, runs[PARALLEL], PARALLEL) == cluster_view(objects, runs[SERIAL], SERIAL)

    # one Event per Application per pass that changed it, and only then
    for namespace in runs.values():
        mine = [e for e in objects.events(namespace) if (e.get("source") or {}).get("component") == "gitops-agent"]
        per_app: dict[str, list[str]] = {}
        for e in mine:
            assert e["involvedObject"]["kind"] == "Application"
            per_app.setdefault(e["involvedObject"]["name"], []).append(e["reason"])
        assert per_app["app00"] == ["Created"]  # created, then unchanged twice
        assert sorted(per_app["app05"]) == ["Created", "Updated"]
        assert sorted(per_app["app03"]) == ["Created", "Updated"]  # the hand edit put back
        assert sorted(per_app["web"]) == ["Created", "Recreated"]
        assert sorted(per_app["gone1"]) == ["Created", "Pruned"]
        assert [e["message"] for e in mine if e["involvedObject"]["name"] == "gone1" and e["reason"] == "Pruned"] == [
            f"pruned Service/{namespace}/gone1, Deployment/{namespace}/gone1, Application/{namespace}/gone1"]
        # the failure's Warning (conditions changed once) is its one Event, naming what was created too
        assert per_app["taken"] == ["OwnershipConflict"]  # its Deployment name is taken by a hand-made one
        warning = next(e for e in mine if e["involvedObject"]["name"] == "taken")
        assert warning["type"] == "Warning" and f"created Application/{namespace}/taken" in warning["message"]
        assert all(len(reasons) <= 3 for reasons in per_app.values())
