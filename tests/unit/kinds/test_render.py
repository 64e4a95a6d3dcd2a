"""render: an Application's desired Deployment and Service, and the CRD matching the schema."""

from pathlib import Path

import yaml

from agent.api import labels as keys, schema
from agent.kinds import registry, render


def test_children_follow_the_original_templates():
    deployment, service = registry.children("nginx", "default", "uid-1",
                                          {"image": "nginx:latest", "replicas": 1, "port": 80})
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert (container["name"], container["image"], container["ports"][0]["containerPort"]) == ("nginx", "nginx:latest", 80)
    assert deployment["spec"]["replicas"] == 1
    assert service["spec"]["ports"][0]["port"] == service["spec"]["ports"][0]["targetPort"] == 80
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["selector"] == selector
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    for child in (deployment, service):
        ref = child["metadata"]["ownerReferences"][0]
        assert ref == {"apiVersion": "heumsi.github.io/v1", "kind": "Application", "name": "nginx",
                       "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}
        labels = child["metadata"]["labels"]
        assert labels[keys.MANAGED_BY] == keys.AGENT_NAME
        assert labels[keys.NAME_LABEL] == labels[keys.INSTANCE_LABEL] == "nginx"


def test_desired_application_marks_ownership_and_provenance():
    body = {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": "a", "namespace": "n", "labels": {"tier": "web"}},
            "spec": {"image": "i", "replicas": 2, "port": 8080}}
    out = render.desired_application(body, "c" * 40, "apps/a.yaml", "src-1")
    assert out["metadata"]["labels"] == {"tier": "web", keys.MANAGED_BY: keys.AGENT_NAME,
                                         keys.SOURCE_LABEL: "src-1"}
    annotations = out["metadata"]["annotations"]
    assert (annotations[keys.SOURCE_COMMIT], annotations[keys.SOURCE_PATH]) == ("c" * 40, "apps/a.yaml")
    assert len(annotations[keys.CONTENT_HASH]) == 16
    assert keys.REPOSITORY not in annotations  # none given: none recorded
    assert "status" not in out


def test_desired_application_records_the_repository_identity():
    body = {"metadata": {"name": "a", "namespace": "n", "annotations": {keys.REPOSITORY: "set in git"}},
            "spec": {"image": "i", "replicas": 2, "port": 8080}}
    out = render.desired_application(body, "c" * 40, "a.yaml", "src-1", "github.com/Org/repo")
    assert out["metadata"]["annotations"][keys.REPOSITORY] == "github.com/Org/repo"  # the agent's, not Git's
    assert out["metadata"]["labels"][keys.SOURCE_LABEL] == "src-1"


def test_removing_a_label_in_git_changes_the_content_hash():
    body = {"metadata": {"name": "a", "namespace": "n", "labels": {"tier": "web"}},
            "spec": {"image": "i", "replicas": 2, "port": 8080}}
    without = {**body, "metadata": {"name": "a", "namespace": "n"}}
    hashes = {render.desired_application(b, "c" * 40, "a.yaml")["metadata"]["annotations"][keys.CONTENT_HASH]
              for b in (body, without)}
    assert len(hashes) == 2


def test_crd_spec_schema_is_the_one_the_agent_validates_with():
    crd = yaml.safe_load((Path(__file__).resolve().parents[3] / "crd.yaml").read_text())
    version = crd["spec"]["versions"][0]
    assert version["schema"]["openAPIV3Schema"]["properties"]["spec"] == schema.SPEC_SCHEMA
    assert (crd["spec"]["group"], crd["spec"]["names"]["kind"], crd["spec"]["names"]["plural"]) \
        == (schema.GROUP, schema.KIND, schema.PLURAL)
    assert crd["spec"]["names"]["shortNames"] == ["app"] and crd["spec"]["scope"] == "Namespaced"
    assert version["subresources"] == {"status": {}}


LABELS = {"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "web",
          "app.kubernetes.io/managed-by": "gitops-agent", "heumsi.github.io/application": "web"}
SELECTOR = {"app.kubernetes.io/instance": "web", "heumsi.github.io/application": "web"}
OWNER = {"apiVersion": "heumsi.github.io/v1", "kind": "Application", "name": "web", "uid": "u-1",
         "controller": True, "blockOwnerDeletion": True}


def test_children_are_exactly_these_objects():
    """The whole rendering, field by field: what the agent sends is what its drift rules own."""
    deployment, service = registry.children("web", "team", "u-1", {"image": "nginx:1.27", "replicas": 3, "port": 8080})
    meta = {"name": "web", "namespace": "team", "labels": LABELS, "ownerReferences": [OWNER]}
    assert deployment == {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
        "spec": {"replicas": 3, "selector": {"matchLabels": SELECTOR},
                 "template": {"metadata": {"labels": LABELS},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                                       "ports": [{"containerPort": 8080, "protocol": "TCP"}]}]}}}}
    assert service == {
        "apiVersion": "v1", "kind": "Service", "metadata": meta,
        "spec": {"selector": SELECTOR,
                 "ports": [{"name": "http", "protocol": "TCP", "port": 8080, "targetPort": 8080}]}}
    # each child gets its own label mappings: changing one never changes the other
    deployment["metadata"]["labels"]["x"] = "y"
    assert "x" not in service["metadata"]["labels"] and "x" not in deployment["spec"]["template"]["metadata"]["labels"]


def test_desired_application_is_exactly_this_object():
    body = {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": "a", "namespace": "n", "labels": {"tier": "web"}, "annotations": {"note": "x"}},
            "spec": {"image": "i", "replicas": 2, "port": 8080}, "status": {"ignored": True}}
    out = render.desired_application(body, "c" * 40, "apps/a.yaml", "src-1")
    import hashlib
    import json
    digest = hashlib.sha256(json.dumps({"labels": {"tier": "web"}, "annotations": {"note": "x"},
                                        "spec": body["spec"]}, sort_keys=True).encode()).hexdigest()[:16]
    assert out == {
        "apiVersion": "heumsi.github.io/v1", "kind": "Application",
        "metadata": {"name": "a", "namespace": "n",
                     "labels": {"tier": "web", "app.kubernetes.io/managed-by": "gitops-agent",
                                "heumsi.github.io/source": "src-1"},
                     "annotations": {"note": "x", keys.CONTENT_HASH: digest, keys.SOURCE_COMMIT: "c" * 40,
                                     keys.SOURCE_PATH: "apps/a.yaml"}},
        "spec": {"image": "i", "replicas": 2, "port": 8080}}
    assert out["spec"] is not body["spec"] and "labels" not in body["metadata"].get("annotations", {})
    assert body["metadata"]["labels"] == {"tier": "web"}  # the parsed document is not changed


def test_the_content_hash_does_not_depend_on_key_order():
    one = {"metadata": {"name": "a", "namespace": "n", "labels": {"a": "1", "b": "2"}},
           "spec": {"image": "i", "replicas": 1, "port": 80}}
    two = {"metadata": {"name": "a", "namespace": "n", "labels": {"b": "2", "a": "1"}},
           "spec": {"port": 80, "replicas": 1, "image": "i"}}
    hashes = [render.desired_application(b, "c", "p")["metadata"]["annotations"][keys.CONTENT_HASH] for b in (one, two)]
    assert hashes[0] == hashes[1]
    assert render.desired_application(one, "c", "p")["metadata"]["labels"][keys.SOURCE_LABEL] == "default"


def test_overridden_names_each_key_git_sets_that_the_agent_sets_otherwise():
    body = {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": "a", "namespace": "n",
                         "labels": {"tier": "web", keys.MANAGED_BY: "helm", keys.SOURCE_LABEL: "src-1"},
                         "annotations": {keys.SOURCE_COMMIT: "old", "note": "x"}},
            "spec": {"image": "i", "replicas": 2, "port": 8080}}
    desired = render.desired_application(body, "c" * 40, "apps/a.yaml", "src-1", "repo")
    assert render.overridden(body, desired) == [
        (f"metadata.labels.{keys.MANAGED_BY}", "helm", keys.AGENT_NAME),  # the same value (source) is no note
        (f"metadata.annotations.{keys.SOURCE_COMMIT}", "old", "c" * 40)]
    plain = {"metadata": {"name": "a", "namespace": "n"}, "spec": body["spec"]}
    assert render.overridden(plain, render.desired_application(plain, "c" * 40, "a.yaml")) == []
