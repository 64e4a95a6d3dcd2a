"""The Service child: the Application's port, selecting its pods. Pure.

Rendered as the original operator's template: a ClusterIP Service ``port -> targetPort``
selecting the pods; health by gitops-engine's Service rule. An Application without ``port`` (a
worker) has none: an existing one is pruned when Git drops the port.
"""

from __future__ import annotations

from agent.api.objects import Obj
from agent.kinds.health import Health, Status, pending_deletion
from agent.kinds.kind import ChildKind
from agent.kinds.render import child_metadata, selector_labels


def wanted(spec: Obj) -> bool:
    return spec.get("port") is not None


def render(name: str, namespace: str, uid: str, spec: Obj) -> Obj | None:
    """The desired ``v1`` Service of the Application ``namespace/name`` with ``uid``: port
    ``spec["port"]`` to the same target port, selecting the Deployment's pods. None without
    ``spec.port``."""
    port = spec.get("port")
    if port is None:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_metadata(name, namespace, uid),
        "spec": {
            "selector": selector_labels(name),
            "ports": [{"name": "http", "protocol": "TCP", "port": port, "targetPort": port}],
        },
    }


def health(obj: Obj | None) -> Health:
    """Health of a ``v1`` Service (gitops-engine ``getCorev1ServiceHealth``).

    Reads ``metadata.deletionTimestamp``, ``spec.type`` and ``status.loadBalancer.ingress``.
    None: Missing. Being deleted: Progressing (``pending_deletion``). A LoadBalancer without an
    ingress address yet: Progressing. Every other Service (ClusterIP, NodePort, ExternalName,
    headless) is Healthy once it exists.
    """
    if obj is None:
        return Health(Status.MISSING, "Service does not exist")
    if (deleting := pending_deletion(obj, "Service")) is not None:
        return deleting
    if (obj.get("spec") or {}).get("type") == "LoadBalancer":
        if not ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress"):
            return Health(Status.PROGRESSING, "waiting for the load balancer to get an address")
    return Health(Status.HEALTHY)


def news(obj: Obj) -> object:
    """What of a watched Service a pass acts on or reports: its spec (Services have no
    generation) and its health."""
    return (obj.get("spec"), health(obj).as_status())


KIND = ChildKind(group="", version="v1", kind="Service", plural="services", render=render, health=health,
                 status_field="service", news=news, wanted=wanted, authoritative=("spec.selector", "spec.ports"),
                 status_schema={"service": {"type": "string",
                                            "description": "Name of the child Service; absent without spec.port."}})
