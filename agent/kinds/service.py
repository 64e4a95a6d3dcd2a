"""The Service child: the Application's ports, selecting its pods. Pure.

Rendered as the original operator's template: a ClusterIP Service ``port -> targetPort``
(named ``http``) selecting the pods, then one Service port per entry of ``spec.ports``; health
by gitops-engine's Service rule. An Application without ``port`` and ``ports`` (a worker) has
none: an existing one is pruned when Git drops them. A worker with ``ports`` (a metrics port)
has a Service of those alone: what a ServiceMonitor or a client of ``<name>.<namespace>.svc``
reaches them by.
"""

from __future__ import annotations

from agent.api.objects import Obj
from agent.api.schema import MAIN_PORT_NAME
from agent.kinds.health import Health, Status, pending_deletion
from agent.kinds.kind import ChildKind
from agent.kinds.render import child_metadata, selector_labels


def wanted(spec: Obj) -> bool:
    return spec.get("port") is not None or bool(spec.get("ports"))


def render(name: str, namespace: str, uid: str, spec: Obj) -> Obj | None:
    """The desired ``v1`` Service of the Application ``namespace/name`` with ``uid``, selecting
    the Deployment's pods: port ``spec["port"]`` named ``http`` to the same target port, then
    each entry ``NAME: N`` of ``spec.ports`` (sorted by name) as port ``N`` named ``NAME`` to
    the same target port; all TCP. None without ``spec.port`` and ``spec.ports``."""
    if not wanted(spec):
        return None
    port, named = spec.get("port"), spec.get("ports") or {}
    ports = [] if port is None else [{"name": MAIN_PORT_NAME, "protocol": "TCP", "port": port, "targetPort": port}]
    ports += [{"name": key, "protocol": "TCP", "port": named[key], "targetPort": named[key]} for key in sorted(named)]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_metadata(name, namespace, uid),
        "spec": {
            "selector": selector_labels(name),
            "ports": ports,
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
                                            "description": "Name of the child Service; absent without spec.port and "
                                                           "spec.ports."}})
