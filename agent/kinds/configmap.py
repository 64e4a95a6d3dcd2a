"""The ConfigMap child: the text files of an Application's ``spec.files`` (``{content: TEXT}``). Pure.

Each file is one key of the ConfigMap (``key``), mounted read-only at its path by the Deployment
(``deployment.render``); the Deployment's pod template carries a digest of the contents
(``labels.FILES_DIGEST``), so a changed file rolls the pods. Files from a Secret or another
ConfigMap (``secretRef``, ``configMapRef``) are mounted from there and need no ConfigMap here.
A ConfigMap holds at most 1 MiB (``MAX_BYTES``: the API server counts each key and its value).
Health: a ConfigMap that exists is Healthy (gitops-engine has no rule for it and counts it
healthy).
"""

from __future__ import annotations

import hashlib
import json
import posixpath

from agent.api.objects import Obj
from agent.kinds.health import Health, Status, pending_deletion
from agent.kinds.kind import ChildKind
from agent.kinds.render import child_metadata

MAX_BYTES = 1024 * 1024
"""A ConfigMap's limit (``MaxSecretSize``, ``ValidateConfigMap`` in Kubernetes' core validation)."""


def key(path: str) -> str:
    """The ConfigMap key of the file at ``path``: its base name (letters, digits, ``-``, ``_``,
    ``.``; other characters become ``_``) and a digest of the whole path, so two paths never
    share a key, e.g. ``/etc/app/config.yaml`` -> ``config.yaml-3b1e0c27``."""
    base = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in posixpath.basename(path))
    return f"{base[:200]}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"


def contents(spec: Obj) -> dict[str, str]:
    """``{path: text}`` of the files from Git (``content``), sorted by path."""
    files = spec.get("files") or {}
    return {path: files[path]["content"] for path in sorted(files) if "content" in files[path]}


def wanted(spec: Obj) -> bool:
    """True when ``spec`` has a file with ``content``."""
    return any("content" in file for file in (spec.get("files") or {}).values())


def digest(spec: Obj) -> str | None:
    """A digest of the files' paths and contents (16 hex digits of the SHA-256 of ``contents``
    as JSON, in path order), None when there are none."""
    found = contents(spec)
    if not found:
        return None
    return hashlib.sha256(json.dumps(found).encode()).hexdigest()[:16]


def render(name: str, namespace: str, uid: str, spec: Obj) -> Obj | None:
    """The desired ``v1`` ConfigMap of the Application ``namespace/name``: one key per file with
    ``content`` (``key``); None when there is none."""
    found = contents(spec)
    if not found:
        return None
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": child_metadata(name, namespace, uid),
            "data": {key(path): text for path, text in found.items()}}


def health(obj: Obj | None) -> Health:
    """Missing when None; Progressing while being deleted; else Healthy."""
    if obj is None:
        return Health(Status.MISSING, "ConfigMap does not exist")
    return pending_deletion(obj, "ConfigMap") or Health(Status.HEALTHY)


def news(obj: Obj) -> object:
    """What of a watched ConfigMap a pass acts on: its data."""
    return obj.get("data")


KIND = ChildKind(group="", version="v1", kind="ConfigMap", plural="configmaps", render=render, health=health,
                 status_field="configMap", news=news, wanted=wanted, authoritative=("data",), rendered=("data",),
                 status_schema={"configMap": {
                     "type": "string",
                     "description": "Name of the child ConfigMap holding the files from Git; absent without any."}})
