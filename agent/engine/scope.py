"""``--allowed-namespaces``: the namespaces a source may touch, enforced at the cluster door.

Why a wrapper around ``Kube`` rather than checks in each step: every read and write of a pass
goes through it, so an Application that targets another namespace cannot get a child there,
cannot be pruned there and cannot have its status written there, whichever step asks. Reads
are filtered (objects outside are invisible: never planned, never pruned); writes outside raise
``ApiError`` (403, reason ``OutsideAllowedNamespaces``) as a second line of defence behind the
manifest check in ``refuse``.

When every pattern is a plain name (no ``*``, ``?``, ``[``), lists are made per namespace, so
the agent needs only namespaced Roles in those namespaces (``deploy/components/namespaced-rbac``)
and never a cluster-wide list. It cannot list Namespaces then, so the allowed namespaces are
taken to exist until a write answers 404 ``namespaces "NAME" not found``: the agent then creates
that namespace (as it creates missing namespaces without the flag) and writes again once. When
it may not create it (403 with namespaced RBAC), the write fails with a message that says the
namespace is missing and how to make it.

The tenant boundary is on without the flag: the system namespaces (``SYSTEM_NAMESPACES``) and the
agent's own namespace (``POD_NAMESPACE``, set by ``deploy/``) are refused unless
``--allowed-namespaces`` names them as a plain name (a glob such as ``*`` or ``kube-*`` does not
let them in). Whoever can push to the synced branch must not get a Deployment in ``kube-system``
or beside the agent, where its ServiceAccount and Secrets live (issue 42). So a ``ScopedKube``
wraps every pass, with or without the flag.
"""

from __future__ import annotations

import builtins
import fnmatch
import logging
from typing import Any, Callable

from agent.api.objects import Obj
from agent.kinds import render
from agent.kube.cluster import ApiError, Cluster, Wrapper

log = logging.getLogger("agent.scope")

_WILDCARDS = set("*?[")
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")


def allowed(namespace: str, patterns: tuple[str, ...] | None) -> bool:
    """True when ``patterns`` is None (no restriction) or ``namespace`` matches one of them
    (shell-style globs, case-sensitive: ``team-*`` matches ``team-web``)."""
    return patterns is None or any(fnmatch.fnmatchcase(namespace, p) for p in patterns)


def protected(namespace: str, agent_namespace: str | None = None) -> str | None:
    """Why ``namespace`` is refused unless named explicitly ("a system namespace", "the agent's own
    namespace"), or None when it is an ordinary namespace."""
    if namespace in SYSTEM_NAMESPACES:
        return "a system namespace"
    if agent_namespace and namespace == agent_namespace:
        return "the agent's own namespace (POD_NAMESPACE)"
    return None


def permitted(namespace: str, patterns: tuple[str, ...] | None, agent_namespace: str | None = None) -> bool:
    """True when an Application may target ``namespace``: a protected one (``protected``) only when
    ``patterns`` holds its plain name; any other when ``allowed``."""
    if protected(namespace, agent_namespace):
        return patterns is not None and namespace in patterns
    return allowed(namespace, patterns)


def literal(patterns: tuple[str, ...] | None) -> list[str] | None:
    """The namespace names when every pattern is a plain name, else None."""
    if patterns is None or any(_WILDCARDS & set(p) for p in patterns):
        return None
    return sorted(set(patterns))


def missing_namespace(err: ApiError, namespace: str | None) -> bool:
    """True when ``err`` is the API server's answer to a write into a namespace that does not
    exist: 404 NotFound, message ``namespaces "NAME" not found``."""
    return namespace is not None and err.status == 404 and f'namespaces "{namespace}" not found' in err.message


def refusal(namespace: str, patterns: tuple[str, ...] | None, agent_namespace: str | None = None) -> str:
    """The message for an Application whose namespace is not ``permitted``: the rule that refused
    it and, for a protected namespace, how to allow it."""
    why = protected(namespace, agent_namespace)
    if why:
        return (f"namespace {namespace!r} is {why}, refused unless --allowed-namespaces names it as a plain name "
                f"(a glob does not; add {namespace!r} to the list to allow it); nothing was created, changed or "
                "pruned there")
    return (f"namespace {namespace!r} is not allowed (--allowed-namespaces {','.join(patterns or ())}); "
            "nothing was created, changed or pruned there")


class ScopedKube(Wrapper):
    """``Kube`` restricted to the namespaces ``permitted`` by ``patterns`` (None: every namespace
    but the protected ones) and ``agent_namespace``; every other attribute is the wrapped Kube's."""

    def __init__(self, kube: Cluster, patterns: tuple[str, ...] | None, agent_namespace: str | None = None):
        self._kube, self.patterns, self.agent_namespace = kube, patterns, agent_namespace
        self.names = literal(patterns)

    def _permitted(self, namespace: str) -> bool:
        return permitted(namespace, self.patterns, self.agent_namespace)

    def _check(self, obj: Obj) -> None:
        namespace = obj.get("metadata", {}).get("namespace")
        if obj.get("kind") == "Namespace":
            namespace = obj["metadata"]["name"]
        if namespace is not None and not self._permitted(namespace):
            raise ApiError(403, "OutsideAllowedNamespaces", refusal(namespace, self.patterns, self.agent_namespace),
                           f"{obj.get('kind')}/{namespace}/{obj['metadata'].get('name')}")

    def list(self, group: str, kind: str, label_selector: str | None = None) -> list[Obj]:
        """Like ``Kube.list``, keeping only objects in allowed namespaces; per namespace when
        the patterns are plain names (Namespaces: the allowed names themselves)."""
        if self.names is None:
            items = self._kube.list(group, kind, label_selector)
            if kind == "Namespace":
                return [n for n in items if self._permitted(n["metadata"]["name"])]
            return [o for o in items if self._permitted(o["metadata"].get("namespace", ""))]
        if kind == "Namespace":
            return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in self.names]
        return [obj for namespace in self.names for obj in self._kube.list_in(group, kind, namespace, label_selector)]

    def list_in(self, group: str, kind: str, namespace: str, label_selector: str | None = None) -> builtins.list[Obj]:
        """Like ``Kube.list_in``; nothing is listed outside the allowed namespaces."""
        if not self._permitted(namespace):
            return []
        return self._kube.list_in(group, kind, namespace, label_selector)

    def apply(self, obj: Obj, force: bool = True) -> Obj:
        self._check(obj)
        return self._into_namespace(obj, lambda: self._kube.apply(obj, force))

    def create(self, obj: Obj) -> Obj:
        self._check(obj)
        return self._into_namespace(obj, lambda: self._kube.create(obj))

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """Like ``Kube.event`` (never raises): an Event is written into ``obj``'s namespace,
        so outside the allowed namespaces none is written, and that is logged."""
        namespace = obj["metadata"].get("namespace")
        if namespace is not None and not self._permitted(namespace):
            log.warning("could not record event %s on %s: %s", reason, obj["metadata"]["name"],
                        refusal(namespace, self.patterns, self.agent_namespace))
            return
        self._kube.event(obj, type_, reason, message)

    def _into_namespace(self, obj: Obj, write: Callable[[], Obj]) -> Obj:
        """``write()``; with plain names, when it answers 404 because ``obj``'s namespace is
        missing, the namespace is created (409 AlreadyExists: another write made it) and
        ``write()`` runs once more. Raises ``ApiError``: the write's, or the creation's with the
        missing namespace named."""
        try:
            return write()
        except ApiError as err:
            namespace = obj.get("metadata", {}).get("namespace")
            if self.names is None or not missing_namespace(err, namespace):
                raise
        try:
            self._kube.create(render.namespace(namespace))
        except ApiError as err:
            if err.status != 409:
                raise ApiError(err.status, err.reason, f"namespace {namespace!r} does not exist and the agent could "
                               f"not create it ({err.message}); create it (kubectl create namespace {namespace}) "
                               "or allow the agent to create namespaces", err.what) from None
        return write()

    def delete(self, obj: Obj, propagation: str = "Background") -> bool:
        self._check(obj)
        return self._kube.delete(obj, propagation)

    def patch_status(self, obj: Obj, status: Obj) -> Obj:
        self._check(obj)
        return self._kube.patch_status(obj, status)

    def patch_managed_fields(self, obj: Obj, entries: builtins.list[Obj]) -> Obj:
        self._check(obj)
        return self._kube.patch_managed_fields(obj, entries)


def split(found: list[Any], patterns: tuple[str, ...] | None,
          agent_namespace: str | None = None) -> tuple[list[Any], list[Any]]:
    """(manifests ``permitted`` by ``patterns`` and ``agent_namespace``, one ``manifests.ManifestError``
    per manifest refused, naming its file, the line of its ``metadata.namespace`` (of the document
    when the namespace is the default), the namespace and the rule)."""
    from agent.manifests.loader import ManifestError

    inside = [m for m in found if permitted(m.namespace, patterns, agent_namespace)]
    outside = [ManifestError(m.path, m.namespace_line or m.line, "metadata.namespace", f"Application {m.namespace}/{m.name}: "
                             + refusal(m.namespace, patterns, agent_namespace))
               for m in found if not permitted(m.namespace, patterns, agent_namespace)]
    return inside, outside
