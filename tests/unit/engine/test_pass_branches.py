"""Branches of the pass's stages the other pass tests leave out: a CRD that is not right, an
Application whose own apply the API server refuses, labels Git sets that the agent overrides,
a pass in a dry run (the wanted-by marks), how each refused file or Application is reported,
and ``on_commit``."""

from __future__ import annotations

import yaml

from agent.engine import wantedby
from agent.kube.cluster import ApiError
from tests.unit.engine.passes import NS, World, conditions


def test_a_missing_crd_stops_the_pass_before_anything_is_written(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml_doc("web")})
    world.kube.crd = False
    report = world.sync()
    assert report.errors == ["the CustomResourceDefinition applications.heumsi.github.io is not installed in the "
                             "cluster (install it with: kubectl apply -f crd.yaml); nothing was changed"]
    assert world.kube.writes == [] and report.changes == []


def test_a_crd_without_a_status_subresource_stops_the_pass(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml_doc("web")})
    world.kube.status_subresource = False
    report = world.sync()
    assert report.errors == ["the CustomResourceDefinition applications.heumsi.github.io in the cluster has no "
                             "status subresource, so no Application status could be stored; apply this project's "
                             "crd.yaml (kubectl apply -f crd.yaml); nothing was changed"]
    assert world.kube.writes == [] and report.changes == []


def app_yaml_doc(name: str, labels: dict | None = None) -> str:
    meta = {"name": name, **({"labels": labels} if labels else {})}
    return yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": meta,
                           "spec": {"image": "nginx:1.27", "replicas": 1, "port": 80}}, sort_keys=False)


def test_a_label_git_sets_that_the_agent_sets_is_a_note_of_each_pass(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml_doc("web", {"app.kubernetes.io/managed-by": "helm", "team": "a"})})
    note = ("web.yaml:1: metadata.labels.app.kubernetes.io/managed-by: set by the agent to 'gitops-agent'; "
            "the value in Git ('helm') is not applied")
    report = world.sync()
    assert report.errors == [] and report.notes == [note]
    assert world.app("web")["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gitops-agent"
    assert world.app("web")["metadata"]["labels"]["team"] == "a"


def test_an_application_whose_own_apply_is_refused_as_invalid_keeps_its_status_reason(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml_doc("web")})
    world.sync()
    world.commit({"web.yaml": app_yaml_doc("web", {"team": "b"})})
    world.kube.fail("apply", f"Application/{NS}/web", ApiError(422, "Invalid", "spec.x: bad"))
    report = world.sync()
    assert report.failures == {f"{NS}/web": "422 Invalid: spec.x: bad"}
    assert report.reasons == {f"{NS}/web": "Invalid"}
    assert conditions(world.app("web"))["Synced"] == ("False", "Invalid", "422 Invalid: spec.x: bad")
    assert [(c.subject, c.action) for c in report.changes] == [(f"Application/{NS}/web", "failed")]


def test_a_refusal_that_is_not_invalid_records_no_reason(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml_doc("web")})
    world.sync()
    world.commit({"web.yaml": app_yaml_doc("web", {"team": "b"})})
    world.kube.fail("apply", f"Application/{NS}/web", ApiError(403, "Forbidden", "no"))
    report = world.sync()
    assert report.failures == {f"{NS}/web": "403 Forbidden: no"} and report.reasons == {}
    assert conditions(world.app("web"))["Synced"] == ("False", "SyncFailed", "403 Forbidden: no")


class Untouchable:
    dry_run = True

    def __getattr__(self, name):
        raise AssertionError(f"a dry run asked the cluster for {name}")


def test_a_dry_run_writes_no_wanted_by_mark():
    class P:
        kube = Untouchable()
    assert wantedby.mark_wanted(P(), None, frozenset({"ns/web"})) is None


def document(name: str, namespace: str | None = None, port: object = 80) -> str:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": meta,
                           "spec": {"image": "x", "port": port}})


def test_what_git_refuses_is_an_error_invalid_and_refused_each_as_it_is_named(tmp_path):
    world = World(tmp_path, allowed_namespaces=("shop",))
    world.commit({"web.yaml": app_yaml_doc("web"), "broken.yaml": "a: [", "bad.yaml": document("bad", port="eighty"),
                  "badname.yaml": document("Bad_Name"), "far.yaml": document("far", "elsewhere")})
    commits = []
    report = world.sync(on_commit=lambda sha, manifests: commits.append((sha, [m.name for m in manifests])))
    assert commits == [(world.repo.head(), ["web"])]  # once read, with the Applications in scope only
    bad = 'bad.yaml:7: spec.port: must be an integer between 1 and 65535 (got "eighty")'
    badname = ("badname.yaml:4: metadata.name: \"Bad_Name\" is not a valid DNS-1123 label (lowercase letters, "
               "digits and '-', starting and ending with a letter or digit, at most 63 characters)")
    broken = ("broken.yaml:1: invalid YAML: expected the node content, but found '<stream end>' (while parsing a "
              "flow node)")
    far = ("far.yaml:5: metadata.namespace: Application elsewhere/far: namespace 'elsewhere' is not allowed "
           "(--allowed-namespaces shop); nothing was created, changed or pruned there")
    assert report.errors == [bad, badname, broken, far]
    assert [str(p) for p in report.problems] == [bad, badname, broken, far]
    assert report.invalid == [("shop/bad", bad), ("badname.yaml:1", badname), ("broken.yaml", broken),
                              ("elsewhere/far", far)]
    assert report.refused == {"shop/bad": bad, "badname.yaml:1": badname, "elsewhere/far": far}  # not a file
    assert [(c.subject, c.action) for c in report.changes] == [
        (f"Application/{NS}/web", "created"), (f"Deployment/{NS}/web", "created"), (f"Service/{NS}/web", "created")]


def test_on_commit_is_not_called_when_the_fetch_failed(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml_doc("web")})
    commits = []
    report = world.sync(repo=str(tmp_path / "nowhere"), on_commit=lambda sha, manifests: commits.append(sha))
    assert report.fetch_failed and commits == []
