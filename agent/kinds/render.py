"""Render the Application as the agent applies it, and what every child shares. Pure.

Each child kind renders itself (``agent/kinds/registry.py``); every child carries an
ownerReference to the Application (controller: true, blockOwnerDeletion: true), so Kubernetes'
garbage collector also removes them when the Application goes, and the agent's ownership
labels (see ``ownership_labels``).
"""

from __future__ import annotations

import hashlib
import json

from agent.api.labels import (AGENT_NAME, APPLICATION_LABEL, CONTENT_HASH, CREATED_BY_AGENT, INSTANCE_LABEL, MANAGED_BY,
                              NAME_LABEL, REPOSITORY, SOURCE_COMMIT, SOURCE_LABEL, SOURCE_PATH)
from agent.api.objects import Obj
from agent.api.schema import API_VERSION, KIND


def namespace(name: str) -> Obj:
    """The Namespace the agent creates when an Application's namespace is missing: ``name``
    labelled ``CREATED_BY_AGENT``, nothing else."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {CREATED_BY_AGENT: AGENT_NAME}}}


def ownership_labels(app_name: str) -> dict[str, str]:
    """Labels every child carries: the Kubernetes recommended app labels plus the owner."""
    return {
        NAME_LABEL: app_name,
        INSTANCE_LABEL: app_name,
        MANAGED_BY: AGENT_NAME,
        APPLICATION_LABEL: app_name,
    }


def selector_labels(app_name: str) -> dict[str, str]:
    """Pod labels the Deployment selector and the Service select on (immutable once created)."""
    return {INSTANCE_LABEL: app_name, APPLICATION_LABEL: app_name}


def owner_reference(app_name: str, app_uid: str) -> Obj:
    """ownerReference to an Application; controller and blockOwnerDeletion per the
    Kubernetes garbage-collection convention for objects a controller creates."""
    return {"apiVersion": API_VERSION, "kind": KIND, "name": app_name, "uid": app_uid,
            "controller": True, "blockOwnerDeletion": True}


def desired_application(manifest_body: Obj, commit: str, path: str, source: str = "default",
                        repository: str | None = None) -> Obj:
    """The Application as the agent applies it from Git.

    Input: the parsed document (apiVersion, kind, metadata with name and namespace, spec);
    ``repository``: the repository's identity (``repository.identity``; None: not recorded).
    Output: apiVersion, kind, metadata (name, namespace, the user's labels and annotations plus
    ``managed-by`` and the ``source`` label, the content hash, source commit and path annotations,
    and the ``repository`` annotation) and spec. Status is never applied.
    """
    meta = manifest_body["metadata"]
    labels = dict(meta.get("labels") or {})
    annotations = dict(meta.get("annotations") or {})
    content = json.dumps({"labels": labels, "annotations": annotations, "spec": manifest_body["spec"]},
                         sort_keys=True)
    labels[MANAGED_BY] = AGENT_NAME
    labels[SOURCE_LABEL] = source
    annotations[CONTENT_HASH] = hashlib.sha256(content.encode()).hexdigest()[:16]
    annotations[SOURCE_COMMIT] = commit
    annotations[SOURCE_PATH] = path
    if repository is not None:
        annotations[REPOSITORY] = repository
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                     "labels": labels, "annotations": annotations},
        "spec": dict(manifest_body["spec"]),
    }


def overridden(manifest_body: Obj, desired: Obj) -> list[tuple[str, str, str]]:
    """The labels and annotations Git sets that the agent sets to another value in ``desired``
    (``desired_application``'s output), as ``(field, value in Git, value applied)`` with
    ``field`` dotted, e.g. ``("metadata.labels.app.kubernetes.io/managed-by", "helm",
    "gitops-agent")``; sorted by field. Empty when Git leaves the agent's keys alone."""
    out = []
    for part in ("labels", "annotations"):
        ours = desired["metadata"][part]
        for key, value in sorted((manifest_body["metadata"].get(part) or {}).items()):
            if key in ours and ours[key] != value:
                out.append((f"metadata.{part}.{key}", value, ours[key]))
    return out


def child_metadata(name: str, namespace: str, uid: str) -> Obj:
    """``metadata`` of every child of the Application ``namespace/name`` with ``uid``: named like
    it, its ownership labels, and a controller ownerReference to it."""
    return {"name": name, "namespace": namespace, "labels": ownership_labels(name),
            "ownerReferences": [owner_reference(name, uid)]}
