"""The Ingress child: a way in from outside to the Application's Service (``spec.ingress``). Pure.

Health by gitops-engine's rule (``pkg/health/health_ingress.go``, ``getIngressHealth``): an
Ingress with an address in ``status.loadBalancer.ingress`` is Healthy, one without is
Progressing. The address is written by an ingress controller: in a cluster without one an
Ingress stays Progressing, as Argo CD shows it.
"""

from __future__ import annotations

from agent.api.objects import Obj
from agent.kinds.health import Health, Status, pending_deletion
from agent.kinds.kind import ChildKind
from agent.kinds.render import child_metadata


def wanted(spec: Obj) -> bool:
    return spec.get("ingress") is not None


def render(name: str, namespace: str, uid: str, spec: Obj) -> Obj | None:
    """The desired ``networking.k8s.io/v1`` Ingress of the Application ``namespace/name``: one
    rule (``host``, if given) sending ``path`` (default ``/``, ``pathType`` default Prefix) to
    the Service's port; ``className``, TLS with ``tlsSecretName`` for the host, and
    ``annotations`` when given. None without ``spec.ingress``."""
    ingress = spec.get("ingress")
    if ingress is None:
        return None
    metadata = child_metadata(name, namespace, uid)
    if ingress.get("annotations"):
        metadata["annotations"] = dict(sorted(ingress["annotations"].items()))
    path = {"path": ingress.get("path", "/"), "pathType": ingress.get("pathType", "Prefix"),
            "backend": {"service": {"name": name, "port": {"number": spec["port"]}}}}
    rule: Obj = {"host": ingress["host"]} if "host" in ingress else {}
    rule["http"] = {"paths": [path]}
    out: Obj = {}
    if "className" in ingress:
        out["ingressClassName"] = ingress["className"]
    out["rules"] = [rule]
    if "tlsSecretName" in ingress:
        tls: Obj = {"hosts": [ingress["host"]]} if "host" in ingress else {}
        out["tls"] = [{**tls, "secretName": ingress["tlsSecretName"]}]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": metadata, "spec": out}


def snippets(spec: Obj) -> list[str]:
    """The keys of ``spec.ingress.annotations`` that inject configuration into the ingress
    controller, sorted: those whose name (after the ``prefix/``) ends in ``snippet``, any case
    (ingress-nginx ``nginx.ingress.kubernetes.io/server-snippet``, ``configuration-snippet``,
    ``auth-snippet``, ``stream-snippet``; HAProxy's ``backend-config-snippet``). Such text runs
    inside the controller's configuration for every host it serves: CVE-2021-25742, and
    ingress-nginx's own ``allow-snippet-annotations`` (off by default since v1.9) say why."""
    annotations = (spec.get("ingress") or {}).get("annotations") or {}
    return sorted(k for k in annotations if isinstance(k, str) and k.rpartition("/")[2].lower().endswith("snippet"))


def snippet_refusal(key: str) -> str:
    """Why the Ingress annotation ``key`` (one of ``snippets``) is refused (``sync`` and ``validate``)."""
    return (f"{key!r} injects configuration into the ingress controller, which serves every namespace's hosts "
            "from it; refused unless the operator allows it (--allow-ingress-snippets)")


def health(obj: Obj | None) -> Health:
    """Health of a ``networking.k8s.io/v1`` Ingress (gitops-engine ``getIngressHealth``): None:
    Missing; being deleted: Progressing; an address in ``status.loadBalancer.ingress``: Healthy;
    none yet: Progressing (no ingress controller has taken it)."""
    if obj is None:
        return Health(Status.MISSING, "Ingress does not exist")
    if (deleting := pending_deletion(obj, "Ingress")) is not None:
        return deleting
    if ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress"):
        return Health(Status.HEALTHY)
    return Health(Status.PROGRESSING, "waiting for an ingress controller to give the Ingress an address")


def news(obj: Obj) -> object:
    """What of a watched Ingress a pass acts on or reports: its spec and its health."""
    return (obj.get("spec"), health(obj).as_status())


KIND = ChildKind(group="networking.k8s.io", version="v1", kind="Ingress", plural="ingresses", render=render,
                 health=health, status_field="ingress", news=news, wanted=wanted,
                 authoritative=("spec.rules", "spec.tls"),
                 status_schema={"ingress": {"type": "string",
                                            "description": "Name of the child Ingress; absent without spec.ingress."}})
