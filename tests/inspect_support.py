"""Helpers of ``test_get.py`` and ``test_explain.py``: a CRD whose status keeps the fields other
parts of the agent are adding (history, the last changed commit), and status written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support import established

ROOT = Path(__file__).resolve().parent.parent
EXTRA_STATUS = {
    "lastChangedCommit": {"type": "string"},
    "lastChangedCommitShort": {"type": "string"},
    "sourceLine": {"type": "integer"},
    "history": {"type": "array", "items": {"type": "object", "properties": {
        "digest": {"type": "string"}, "revision": {"type": "string"}, "firstSyncedAt": {"type": "string"},
        "lastSyncedAt": {"type": "string"}, "passes": {"type": "integer"}}}},
}
"""Status fields ``get`` and ``explain`` read when present; added to the CRD for these tests only
where ``crd.yaml`` lacks them (the API server prunes unknown status fields)."""


@pytest.fixture(scope="module")
def crd_with_history(cluster, crd, tmp_path_factory):
    """``crd.yaml`` with ``EXTRA_STATUS`` in its status schema, installed for a module and
    replaced by ``crd.yaml`` as it is after it."""
    doc = yaml.safe_load((ROOT / "crd.yaml").read_text())
    for version in doc["spec"]["versions"]:
        props = version["schema"]["openAPIV3Schema"]["properties"]["status"].setdefault("properties", {})
        for key, schema in EXTRA_STATUS.items():
            props.setdefault(key, schema)
    path = tmp_path_factory.mktemp("crd") / "crd.yaml"
    path.write_text(yaml.safe_dump(doc))
    established(cluster, path, crd)
    yield crd
    cluster.kubectl("apply", "-f", str(ROOT / "crd.yaml"))


def patch_status(cluster, namespace: str, name: str, status: dict) -> None:
    """A merge patch of the Application's status (what a pass of a newer agent would write)."""
    cluster.kubectl("-n", namespace, "patch", "application", name, "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": status}))
