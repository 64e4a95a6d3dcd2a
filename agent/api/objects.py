"""The shapes of Kubernetes API objects as the agent reads them: plain dicts as the API server
serves them (JSON decoded), named for the type checker. No behaviour.

``Obj`` is a whole object (``apiVersion``, ``kind``, ``metadata``, ``spec``, ``status``...): its
parts differ per kind and the agent reads them with ``.get`` and defaults, so a ``TypedDict``
would claim more than holds. ``ObjectMeta`` and ``OwnerReference`` name the parts of
``metadata`` every kind shares (Kubernetes ``meta/v1``), each key optional as the server may
leave it out.
"""

from __future__ import annotations

from typing import Any, TypedDict

Obj = dict[str, Any]
"""A whole API object, or a part of one whose shape depends on its kind (``spec``, ``status``)."""


class OwnerReference(TypedDict, total=False):
    """One entry of ``metadata.ownerReferences`` (``meta/v1 OwnerReference``)."""

    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    """The ``metadata`` the agent reads (``meta/v1 ObjectMeta``); every key may be absent."""

    name: str
    namespace: str
    uid: str
    generation: int
    resourceVersion: str
    creationTimestamp: str
    deletionTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]
    managedFields: list[Obj]
