"""An Ingress may not claim a host and path another namespace's Ingress already serves.

Why: an Ingress controller serves one host from every Ingress that names it, whatever namespace
each is in. So whoever can push to the synced branch could otherwise route another team's host,
or a path under it (``/login``), to a Service of their own (issue 42). Argo CD leaves this to the
ingress controller; ingress-nginx refuses only some of it, and only with its admission webhook.

The rule (``claims``): a host and path pair of a desired Ingress that its live Ingress does not
serve yet is refused when an Ingress of another namespace serves the same host (``covers``: or a
wildcard matching it; a rule with no host is one host too: every host) with an overlapping path: one path is the other or lies under
it, by whole segments (``/`` overlaps every path; ``/api`` and ``/api/v1`` overlap; ``/api`` and
``/apis`` do not). What the Application's own namespace serves is that namespace's business.

Cost: one LIST of every Ingress in the cluster (``Cluster.list_unscoped``: the scope of
``--allowed-namespaces`` would hide the other tenants' Ingresses), only on a pass that creates or
updates an Ingress, kept for the rest of the pass; the Ingresses the pass writes are added to it,
so two Applications of one pass cannot claim one host either (the first in the pass's order wins).
A no-change pass sends no request for it. An agent that may not list Ingresses cluster-wide
writes none (fail closed); ``deploy/components/namespaced-rbac`` grants that one read.
"""

from __future__ import annotations

from typing import cast

from agent.api.objects import Obj
from agent.engine import plan
from agent.kube.cluster import ApiError, Cluster

GROUP, KIND = "networking.k8s.io", "Ingress"
EVERYWHERE = (GROUP, KIND, "*")
"""The key of the cluster-wide list in ``apply.claim``'s ``listed`` (no namespace is named ``*``)."""


def served(ingress: Obj | None) -> set[tuple[str, str]]:
    """The (host, path) pairs ``ingress`` serves: each rule's host ("" for none) and each of its
    HTTP paths ("/" for none)."""
    out: set[tuple[str, str]] = set()
    for rule in ((ingress or {}).get("spec") or {}).get("rules") or []:
        host = rule.get("host") or ""
        for path in (rule.get("http") or {}).get("paths") or [{}]:
            out.add((host, path.get("path") or "/"))
    return out


def covers(theirs: str, host: str) -> bool:
    """True when requests for ``host`` reach ``theirs`` now: the same name, or ``theirs`` is a
    wildcard (``*.example.com``) matching ``host``'s first label (``shop.example.com``, not
    ``a.b.example.com``: the Ingress API's rule). A more specific host would take them over."""
    if theirs == host:
        return True
    return theirs.startswith("*.") and host.count(".") > 0 and host.split(".", 1)[1] == theirs[2:]


def overlaps(a: str, b: str) -> bool:
    """True when the paths ``a`` and ``b`` share requests: equal, or one under the other by whole
    segments (``/`` is under nothing and over everything)."""
    a, b = a.rstrip("/") + "/", b.rstrip("/") + "/"
    return a.startswith(b) or b.startswith(a)


def claims(desired: Obj, live: Obj | None, others: list[Obj]) -> str | None:
    """Why ``desired`` (an Ingress; ``live``: its live object, None when new) may not be written:
    the first host and path it newly claims that an Ingress of another namespace in ``others``
    serves; None when it may."""
    namespace = desired["metadata"].get("namespace")
    new = sorted(served(desired) - served(live))
    for other in others:
        meta = other.get("metadata") or {}
        if meta.get("namespace") == namespace:
            continue
        for host, path in new:
            for their_host, their_path in sorted(served(other)):
                if covers(their_host, host) and overlaps(path, their_path):
                    shown = f"host {host!r}" if host else "every host (a rule with no host)"
                    return (f"claims {shown} path {path!r}, which Ingress {meta.get('namespace')}/{meta.get('name')} "
                            f"already serves ({their_path!r}): another namespace's host is not taken over "
                            "(OwnershipConflict); choose another host or path, or remove that Ingress first")
    return None


def check(kube: Cluster, steps: list[plan.Step],
          listed: dict[tuple[str, str, str], list[Obj]]) -> tuple[list[plan.Step], list[tuple[plan.Step, str]]]:
    """(the steps that may go ahead, the Ingress creates and updates refused with why). Lists every
    Ingress once, into ``listed[EVERYWHERE]``, when a step writes one; each allowed write is added
    to that list. When the list is refused (403: namespaced Roles only), every such write is refused,
    saying so (fail closed). Raises ``ApiError`` when the list fails otherwise."""
    writes = [s for s in steps if s.identity[:2] == (GROUP, KIND) and s.action in (plan.Op.CREATE, plan.Op.UPDATE)]
    if not writes:
        return steps, []
    if EVERYWHERE not in listed:
        try:
            listed[EVERYWHERE] = list(kube.list_unscoped(GROUP, KIND))
        except ApiError as err:
            if err.status != 403:
                raise
            unchecked = (f"could not check that no other namespace serves its hosts: listing Ingresses in every "
                         f"namespace was refused ({err.message}); grant the agent list on ingresses cluster-wide "
                         "(deploy/components/namespaced-rbac does)")
            ids = {id(s) for s in writes}
            return [s for s in steps if id(s) not in ids], [(s, unchecked) for s in writes]
    others = listed[EVERYWHERE]
    refused: dict[int, str] = {}
    for step in writes:
        desired = cast(Obj, step.desired)  # a create's or an update's
        why = claims(desired, step.live, others)
        if why is None:
            others.append(desired)
        else:
            refused[id(step)] = why
    return [s for s in steps if id(s) not in refused], [(s, refused[id(s)]) for s in steps if id(s) in refused]
