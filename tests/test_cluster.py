"""The local control plane itself: the parts the agent's tests rely on really work."""

from __future__ import annotations

import textwrap

from kubernetes import client

from tests.support import wait_for


def test_client_from_written_kubeconfig_lists_namespaces(api):
    names = {ns.metadata.name for ns in client.CoreV1Api(api).list_namespace().items}
    assert {"default", "kube-system"} <= names


def _deployment(name: str, replicas: int) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:latest"}]}}}}


def test_deployment_pods_become_ready_on_the_fake_node(api, namespace):
    apps = client.AppsV1Api(api)
    apps.create_namespaced_deployment(namespace, _deployment("web", 2))
    wait_for(lambda: (apps.read_namespaced_deployment("web", namespace).status.ready_replicas or 0) == 2,
             timeout=90, what="2 ready replicas")


def test_garbage_collector_deletes_dependents_of_a_deleted_owner(api, namespace):
    core = client.CoreV1Api(api)
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "dependent", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}]}})
    core.delete_namespaced_config_map("owner", namespace)
    names = lambda: {cm.metadata.name for cm in core.list_namespaced_config_map(namespace).items}
    wait_for(lambda: "dependent" not in names(), timeout=60, what="the dependent to be collected")


def test_namespace_with_running_deployment_deletes(api, cluster):
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    core.create_namespace({"metadata": {"name": "doomed"}})
    apps.create_namespaced_deployment("doomed", _deployment("web", 1))
    wait_for(lambda: (apps.read_namespaced_deployment("web", "doomed").status.ready_replicas or 0) == 1,
             timeout=90, what="a ready pod")
    core.delete_namespace("doomed")
    wait_for(lambda: "doomed" not in {n.metadata.name for n in core.list_namespace().items},
             timeout=120, what="namespace deletion to complete")


def test_crd_from_yaml_becomes_established_and_serves_objects(cluster, namespace, tmp_path):
    manifest = tmp_path / "widget-crd.yaml"
    manifest.write_text(textwrap.dedent("""\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {name: widgets.example.com}
        spec:
          group: example.com
          scope: Namespaced
          names: {plural: widgets, singular: widget, kind: Widget}
          versions:
          - name: v1
            served: true
            storage: true
            schema:
              openAPIV3Schema:
                type: object
                properties:
                  spec: {type: object, properties: {size: {type: integer}}}
        """))
    cluster.kubectl("apply", "-f", str(manifest))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/widgets.example.com")
    widget = tmp_path / "widget.yaml"
    widget.write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n")
    cluster.kubectl("apply", "-n", namespace, "-f", str(widget))
    out = cluster.kubectl("get", "widgets", "-n", namespace, "-o", "jsonpath={.items[0].spec.size}")
    assert out.stdout == "3"
    cluster.kubectl("delete", "-f", str(manifest))
