"""render: an Application's desired Deployment and Service, and the CRD matching the schema."""

from pathlib import Path

import yaml

from agent import render, schema


def test_children_follow_the_original_templates():
    deployment, service = render.children("nginx", "default", "uid-1",
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
        assert labels[render.MANAGED_BY] == render.AGENT_NAME
        assert labels[render.NAME_LABEL] == labels[render.INSTANCE_LABEL] == "nginx"


def test_desired_application_marks_ownership_and_provenance():
    body = {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": "a", "namespace": "n", "labels": {"tier": "web"}},
            "spec": {"image": "i", "replicas": 2, "port": 8080}}
    out = render.desired_application(body, "c" * 40, "apps/a.yaml", "src-1")
    assert out["metadata"]["labels"] == {"tier": "web", render.MANAGED_BY: render.AGENT_NAME,
                                         render.SOURCE_LABEL: "src-1"}
    annotations = out["metadata"]["annotations"]
    assert (annotations[render.SOURCE_COMMIT], annotations[render.SOURCE_PATH]) == ("c" * 40, "apps/a.yaml")
    assert len(annotations[render.CONTENT_HASH]) == 16
    assert "status" not in out


def test_removing_a_label_in_git_changes_the_content_hash():
    body = {"metadata": {"name": "a", "namespace": "n", "labels": {"tier": "web"}},
            "spec": {"image": "i", "replicas": 2, "port": 8080}}
    without = {**body, "metadata": {"name": "a", "namespace": "n"}}
    hashes = {render.desired_application(b, "c" * 40, "a.yaml")["metadata"]["annotations"][render.CONTENT_HASH]
              for b in (body, without)}
    assert len(hashes) == 2


def test_crd_spec_schema_is_the_one_the_agent_validates_with():
    crd = yaml.safe_load((Path(__file__).resolve().parents[2] / "crd.yaml").read_text())
    version = crd["spec"]["versions"][0]
    assert version["schema"]["openAPIV3Schema"]["properties"]["spec"] == schema.SPEC_SCHEMA
    assert (crd["spec"]["group"], crd["spec"]["names"]["kind"], crd["spec"]["names"]["plural"]) \
        == (schema.GROUP, schema.KIND, schema.PLURAL)
    assert crd["spec"]["names"]["shortNames"] == ["app"] and crd["spec"]["scope"] == "Namespaced"
    assert version["subresources"] == {"status": {}}
