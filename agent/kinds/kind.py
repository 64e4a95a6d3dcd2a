"""What a child kind is to the agent: one entry of the registry (``agent/kinds/registry.py``).

Every kind-specific rule of the pass lives in its ``ChildKind``: how it is rendered from an
Application's spec, its health, the fields the agent owns in full, what of it the
Application's status shows (and those fields' schema in the CRD), and what of a watched object
is news. Its REST resource (``group``, ``plural``) is also its RBAC rule in ``deploy/``. The
engine, the cluster door and ``run`` read these and never name a kind (gitops-engine keeps one
health function per kind the same way).

Most kinds have one object per Application, named like it. A kind with ``many`` (a CronJob per
schedule) has several, each named ``<application>-<member>`` (``names``): its render answers a
list, and the pass indexes its live objects by slot ``Kind/name`` (``slot``) where the others
sit under their kind; a live object of it no render answers any more is pruned like any other
unpaired child.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agent.api.objects import Obj
from agent.kinds.health import Health


def _unchanged(obj: Obj) -> Obj:
    return obj


def _nothing(obj: Obj | None) -> Obj:
    return {}


def _always(spec: Obj) -> bool:
    return True


def _itself(name: str, spec: Obj) -> tuple[str, ...]:
    return (name,)


@dataclass(frozen=True)
class ChildKind:
    """One child kind. ``group`` ("" for the core group), ``version``, ``kind`` and ``plural``
    name its REST resource (namespaced); ``render(name, namespace, uid, spec)`` makes the
    desired object of the Application ``namespace/name`` (None: its spec asks for none);
    ``health(live or None)`` answers a ``Health``; ``authoritative``: dotted spec paths the
    agent renders in full (``fields.AUTHORITATIVE``: anything else in them is removed);
    ``status_field``: the Application status key naming the child; ``status_schema``: the
    OpenAPI v3 schema of each status field the kind adds, by name (``status_field`` and every key
    ``observed`` answers), in the CRD's order (``agent/kinds/install.py`` collects them for
    ``crd.yaml``); ``observed(live or None)``: the status fields read from the live child;
    ``trim(obj)``: cuts a listed or applied object to what a pass reads (in place);
    ``news(obj)``: what of a watched object a pass acts on or reports (JSON-able), besides its
    metadata. ``wanted(spec)``: whether an Application with
    ``spec`` has a child of this kind (``render`` answers None exactly when it is False);
    ``released``: of ``authoritative``, the paths the agent owns only while its render sets them
    (a Deployment's ``spec.replicas``: without it, the autoscaler or a person owns the value);
    ``whole_when_rendered``: of ``authoritative``, the paths the agent owns in full only while its
    render sets them, and gives up like any other field when it stops (a pod's
    ``securityContext``: without ``spec.security`` one set by hand stays, as before the field);
    ``rendered``: dotted paths under which every field the agent applied is one its render still
    sets, or the next apply removes it (``fields.dropped``).

    ``many``: an Application has several objects of the kind (see the module docstring): its
    ``render`` answers a list (empty: none); ``names(name, spec)`` answers the object names the
    Application ``name`` with ``spec`` has, in render order; ``status_field`` is a list in the
    status, one entry per object, that ``observed_all(name, spec, children)`` answers from the
    Application's live children by slot (``observed`` is not called); ``health`` answers each
    object's.

    ``related``: (group, kind, label selector) of the objects its children make (a CronJob's
    Jobs) that the pass reads for the status alone (``livestate``: one LIST, only when an
    Application has a child of this kind; never applied, paired or pruned): each is put among
    the children of the Application whose child is its controller, in slot ``Kind/name``."""

    group: str
    version: str
    kind: str
    plural: str
    render: Callable[[str, str, str, Obj], Obj | list[Obj] | None]
    health: Callable[[Obj | None], Health]
    status_field: str
    status_schema: Mapping[str, Obj] = field(hash=False)  # a dict: the kind hashes without it
    news: Callable[[Obj], object]
    authoritative: tuple[str, ...] = ()
    observed: Callable[[Obj | None], Obj] = _nothing
    trim: Callable[[Obj], Obj] = _unchanged
    wanted: Callable[[Obj], bool] = _always
    released: tuple[str, ...] = ()
    whole_when_rendered: tuple[str, ...] = ()
    rendered: tuple[str, ...] = ("spec",)
    many: bool = False
    names: Callable[[str, Obj], tuple[str, ...]] = _itself
    observed_all: Callable[[str, Obj, Mapping[str, Obj | None]], Obj] | None = None
    related: tuple[str, str, str] | None = None

    def objects(self, name: str, namespace: str, uid: str, spec: Obj) -> list[Obj]:
        """What ``render`` answers for the Application ``namespace/name``, as a list: none, its one
        object, or (``many``) each of its objects."""
        found = self.render(name, namespace, uid, spec)
        return [] if found is None else found if isinstance(found, list) else [found]

    def slot(self, name: str) -> str:
        """Where the pass keeps this kind's live object ``name`` among its Application's children:
        the kind, or ``Kind/name`` for a kind with ``many``."""
        return f"{self.kind}/{name}" if self.many else self.kind

    @property
    def api_version(self) -> str:
        """``apps/v1``, or ``v1`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_prefix(self) -> str:
        """The REST prefix of its group and version: ``/apis/apps/v1`` or ``/api/v1``."""
        return f"/apis/{self.api_version}" if self.group else f"/api/{self.version}"
