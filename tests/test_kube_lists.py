"""``Kube.list`` against the real API server: a list read item by item (``agent/kube/listread.py``),
across many chunk boundaries, is the list ``kubectl`` gets, and its objects share equal parts
that refuse to change (``agent/kube/share.py``)."""

from __future__ import annotations

import json

import pytest
import yaml

from agent.kube import listread
from agent.kube.client import Kube


def services(namespace: str, n: int) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": f"svc-{i}", "namespace": namespace, "labels": {"app": "lists", "i": str(i)},
                      "annotations": {"note": "ü" * (i * 40)}},  # items of growing size, multi-byte text
         "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}], "selector": {"app": "lists"}}}
        for i in range(n)]})


@pytest.mark.parametrize("chunk", [97, 4096])
def test_a_list_read_in_small_chunks_is_the_list_kubectl_gets(cluster, namespace, tmp_path, monkeypatch, chunk):
    manifest = tmp_path / "services.yaml"
    manifest.write_text(services(namespace, 30))
    cluster.kubectl("apply", "-f", str(manifest))
    monkeypatch.setattr(listread, "CHUNK", chunk)  # far below one item: every item crosses chunks
    kube = Kube(kubeconfig=str(cluster.kubeconfig))
    items = kube.list_in("", "Service", namespace, "app=lists")
    expected = json.loads(cluster.kubectl("get", "services", "-n", namespace, "-l", "app=lists", "-o", "json").stdout)
    assert [i["metadata"]["name"] for i in items] == [i["metadata"]["name"] for i in expected["items"]]
    for got, want in zip(items, expected["items"]):
        assert got["kind"] == "Service" and got["apiVersion"] == "v1"  # list items omit them
        assert got["spec"] == want["spec"] and got["status"] == want["status"]
        assert {k: v for k, v in got["metadata"].items() if k != "managedFields"} == \
               {k: v for k, v in want["metadata"].items() if k != "managedFields"}
    assert all(i["spec"]["ports"] is items[0]["spec"]["ports"] for i in items)  # one shared part
    with pytest.raises(TypeError, match="shared part of live objects"):
        items[0]["spec"]["ports"].append({"port": 81})
    assert items[1]["spec"]["ports"] == [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]


def test_objects_applied_in_one_pass_share_equal_parts_and_refuse_changes(cluster, namespace):
    kube = Kube(kubeconfig=str(cluster.kubeconfig))
    docs = yaml.safe_load(services(namespace, 2))["items"]
    with kube.sharing():
        first, second = (kube.apply(doc) for doc in docs)
    assert first["metadata"]["name"] == "svc-0" and second["metadata"]["name"] == "svc-1"
    assert first["spec"]["ports"] is second["spec"]["ports"] and first["spec"]["selector"] is second["spec"]["selector"]
    with pytest.raises(TypeError, match="shared part of live objects"):
        first["spec"]["selector"]["app"] = "other"
    outside = kube.apply(docs[0])  # outside a pass nothing is kept to share with
    assert outside["spec"] == first["spec"] and type(outside["spec"]) is dict
