"""An in-memory API server behind the ``Cluster`` protocol (``agent/kube/cluster.py``): what a
pass asks of the cluster, answered as the API server answers it, in microseconds.

``FakeCluster`` keeps objects by (group, kind, namespace, name) and honours what the pass relies
on; ``tests/test_fake_cluster.py`` runs each of these behaviours against the real control plane
too and compares the outcomes:

- resourceVersion: every write that changes an object moves it (a global counter, a string); a
  write that changes nothing (an apply of the same fields) does not; a write carrying a stale
  ``metadata.resourceVersion`` is refused with 409 Conflict; uid and creationTimestamp are set on
  create; ``generation`` starts at 1 and moves when anything outside metadata and status moves
  (kinds that have one: ``GENERATION``).
- server-side apply: ``metadata.managedFields`` entries per manager and operation, in FieldsV1
  (``fieldset``: keyed lists as Kubernetes' schemas key them, ``LIST_KEYS``; atomic selectors
  and owner references, ``ATOMIC``; a CRD's lists are atomic); a field another manager owns
  with another value is a conflict (409) unless ``force``, which takes it over; fields a manager stops applying are removed unless another
  manager owns them; ``status`` of a kind with a status subresource is ignored by apply and
  written only through ``patch_status``; an apply of a kind that is not served is 404.
- refusals: invalid names and missing fields the API server refuses (422 Invalid), a
  namespaced object in a namespace that does not exist (404), create of an existing object
  (409 AlreadyExists), a JSON patch whose resourceVersion test fails (422), an update (``put``)
  of an Application without a resourceVersion (422), a changed Deployment selector (422, immutable).
- deletion: 404 (``False``) for an absent object, a uid precondition that names another object
  (``False``), the garbage collector at once (``Background``/``Foreground`` delete dependents,
  ``Orphan`` drops their ownerReference; the real one takes a moment, and holds an object
  deleted with ``Orphan`` or ``Foreground`` by a finalizer meanwhile); a Namespace takes its
  objects along; an object with finalizers only gets a deletionTimestamp. Not modelled: the
  collector also deletes an object whose owner's uid does not exist.
- lists by label selector (``=``, ``==``, ``!=``, ``in``, ``notin``, exists, ``!``);
  ``served(group, version)`` with the subresources (``applications/status``).
- ``dry_run`` (writes answered, nothing kept; status writes and events not sent, as ``Kube``),
  ``concurrency`` (every verb holds one lock: parallel writes are safe), ``sharing()`` (the
  objects ``apply`` returns share equal parts, as ``Kube``'s), ``event`` (kept in ``events``).

Test-side helpers that are not verbs of a pass: ``apply(..., manager=)`` (another manager's
server-side apply), ``put`` (an update, as ``kubectl edit`` or a controller writes: operation
Update), ``add``/``stored``/``objects`` (set up and read the store), ``writes`` (every write
request a pass sent, in order), ``requests`` (every request, reads too, as ``Request``s),
``on`` (a hook run before each request of a verb and kind: it raises an ``ApiError`` to answer
with it, ``ApiError(0, ...)`` for an unreachable server, or changes the store, as a controller
does between two requests) and ``fail`` (the next write of one object raises an ApiError: an
``on`` hook).
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import itertools
import json
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from agent.api.labels import AGENT_NAME
from agent.api.schema import GROUP, KIND, PLURAL, VERSION
from agent.kinds import fields, registry
from agent.kube import share
from agent.kube.client import RESOURCES, item_of
from agent.kube.cluster import ApiError

Key = tuple[str, str, str, str]  # (group, kind, namespace, name); namespace "" when cluster-scoped
Path = tuple[str, ...]  # FieldsV1 keys, e.g. ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}', ".")

STATUS_SUBRESOURCE = frozenset({("apps", "Deployment"), ("autoscaling", "HorizontalPodAutoscaler"),
                                ("networking.k8s.io", "Ingress"), ("", "Service"), ("", "Namespace"),
                                ("policy", "PodDisruptionBudget"), (GROUP, KIND)})
"""Kinds whose status is a subresource: apply and update leave their status alone."""
GENERATION = frozenset({("apps", "Deployment"), ("networking.k8s.io", "Ingress"), ("batch", "CronJob"),
                        ("policy", "PodDisruptionBudget"), (GROUP, KIND)})
"""Kinds whose ``metadata.generation`` the API server keeps."""
LABEL_NAMED = frozenset({("", "Service"), ("", "Namespace")})
"""Kinds whose names must be DNS-1123 labels (63 characters, no dots); others are subdomains."""
LIST_KEYS = {"containers": ("name",), "initContainers": ("name",), "env": ("name",), "volumes": ("name",),
             "volumeMounts": ("mountPath",), "ownerReferences": ("uid",), "conditions": ("type",),
             "imagePullSecrets": ("name",), "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable")}
"""Keyed lists (``x-kubernetes-list-map-keys``) by field name; ``ports`` is keyed by
``_ports_key``; ``finalizers`` is a set; every other list is atomic (replaced whole: a pod's
``tolerations``)."""
ATOMIC = frozenset({("Deployment", ("f:spec", "f:selector")), ("Service", ("f:spec", "f:selector")),
                    ("PodDisruptionBudget", ("f:spec", "f:selector"))})
"""(kind, path) of the mappings Kubernetes' schemas mark atomic (``x-kubernetes-map-type``): a
LabelSelector, a Service's selector; an ownerReferences entry is atomic too (``_atomic``)."""
ATOMIC_FIELDS = frozenset({"f:secretKeyRef", "f:configMapKeyRef", "f:fieldRef", "f:resourceFieldRef",
                           "f:nodeSelector", "f:labelSelector"})
"""Fields holding atomic structs wherever they are (an env variable's ``valueFrom``, a pod's
``nodeSelector``: ``+mapType=atomic`` in ``k8s.io/api/core/v1``; a topology spread constraint's
``labelSelector``, a LabelSelector: ``+structType=atomic``)."""
STRIPPED = ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
            "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds")
"""Metadata fields no manager owns."""
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
NOW = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class Request:
    """One request sent to the fake: ``verb`` (the ``Cluster`` method: ``get``, ``list``,
    ``list_in``, ``list_unscoped``, ``apply``, ``create``, ``delete``, ``patch_status``, ...),
    ``kind``, ``namespace`` ("" when cluster-scoped or all namespaces), ``name`` ("" for a list)
    and a list's label ``selector`` (None: none)."""

    verb: str
    kind: str
    namespace: str = ""
    name: str = ""
    selector: str | None = None

    @property
    def subject(self) -> str:
        """``Kind/namespace/name`` as ``subject`` names objects (a list: ``Kind/namespace``)."""
        return "/".join(part for part in (self.kind, self.namespace, self.name) if part)


Hook = Callable[[Request], None]


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime(NOW)


def key_of(obj: dict) -> Key:
    """``obj``'s identity (group from its apiVersion)."""
    meta = obj.get("metadata") or {}
    group = obj["apiVersion"].rpartition("/")[0]
    namespaced = RESOURCES.get((group, obj["kind"]), ("", "", True))[2]
    return group, obj["kind"], (meta.get("namespace") or "") if namespaced else "", meta.get("name") or ""


def subject(key: Key) -> str:
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped), as a report names objects."""
    return "/".join(part for part in (key[1], key[2], key[3]) if part)


# -- FieldsV1 ---------------------------------------------------------------------------------

def _ports_key(path: Path, kind: str) -> tuple[str, ...]:
    if kind == "Service" and path == ("f:spec", "f:ports"):
        return "port", "protocol"
    return "containerPort", "protocol"


def _list_type(path: Path, name: str, kind: str):
    """"set", a tuple of key fields, or None (atomic) for the list at ``path`` named ``name``."""
    if name == "finalizers" and path == ("f:metadata", "f:finalizers"):
        return "set"
    if kind == KIND and path[:1] != ("f:metadata",):
        return None  # a CRD's lists are atomic unless its schema says otherwise (ours does not)
    if name == "ports":
        return _ports_key(path, kind)
    return LIST_KEYS.get(name)


def _entry_key(item: dict, keys: tuple[str, ...]) -> str:
    return "k:" + json.dumps({k: item[k] for k in keys if k in item}, separators=(",", ":"), sort_keys=True)


def fieldset(obj: dict, kind: str) -> set[Path]:
    """The leaf paths ``obj`` (an applied or stored object) sets, as a manager would own them:
    identity and bookkeeping metadata (``STRIPPED``) and apiVersion/kind left out."""
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    if "metadata" in body:
        body["metadata"] = {k: v for k, v in body["metadata"].items() if k not in STRIPPED}
        if not body["metadata"]:
            del body["metadata"]
    out: set[Path] = set()
    _walk(body, (), kind, out)
    return out


def _atomic(path: Path, kind: str) -> bool:
    """True for a mapping Kubernetes' schema makes atomic (``ATOMIC``): owned and replaced whole."""
    return (kind, path) in ATOMIC or (path[-1:] and path[-1] in ATOMIC_FIELDS and kind != KIND) or \
        (len(path) == 3 and path[:2] == ("f:metadata", "f:ownerReferences"))


def _walk(value, path: Path, kind: str, out: set[Path]) -> None:
    if isinstance(value, dict) and path and _atomic(path, kind):
        out.add(path)
    elif isinstance(value, dict):
        if not value and path:
            out.add(path)
        for name, sub in value.items():
            here = path + (f"f:{name}",)
            kind_of_list = _list_type(here, name, kind) if isinstance(sub, list) else None
            if kind_of_list == "set":
                out.update(here + ("v:" + json.dumps(v, separators=(",", ":")),) for v in sub)
                if not sub:
                    out.add(here)
            elif kind_of_list:
                for item in sub:
                    entry = here + (_entry_key(item, kind_of_list),)
                    if not _atomic(entry, kind):
                        out.add(entry + (".",))
                    _walk(item, entry, kind, out)
                if not sub:
                    out.add(here)
            else:
                _walk(sub, here, kind, out)
    else:
        out.add(path)


def trie(paths: set[Path]) -> dict:
    """The FieldsV1 trie of ``paths``."""
    root: dict = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(part, {})
    return root


def paths_of(trie_: dict, at: Path = ()) -> set[Path]:
    """The leaf paths of a FieldsV1 trie (``trie``'s inverse)."""
    out: set[Path] = set()
    for key, sub in trie_.items():
        if sub:
            out |= paths_of(sub, at + (key,))
        else:
            out.add(at + (key,))
    return out


def _find(node, part: str):
    """(found, value) of one FieldsV1 step into ``node``."""
    if part.startswith("f:") and isinstance(node, dict):
        return (part[2:] in node), node.get(part[2:])
    if part.startswith("k:") and isinstance(node, list):
        want = json.loads(part[2:])
        hit = [i for i in node if isinstance(i, dict) and all(i.get(k) == v for k, v in want.items())]
        return bool(hit), (hit[0] if hit else None)
    if part.startswith("v:") and isinstance(node, list):
        value = json.loads(part[2:])
        return value in node, value
    return False, None


def value_at(obj: dict, path: Path):
    """(found, value) at ``path`` in ``obj``; a ``.`` step is the node itself."""
    node = obj
    for part in path:
        if part == ".":
            continue
        found, node = _find(node, part)
        if not found:
            return False, None
    return True, node


def _remove(obj: dict, path: Path) -> None:
    """Remove the field, keyed entry (``k:...``, ``.``) or set value at ``path`` from ``obj``,
    and each mapping or list that the removal left empty on the way up (as server-side apply
    does: a container's last port or mount removed removes ``ports`` or ``volumeMounts``)."""
    if path and path[-1] == ".":
        path = path[:-1]
    found, parent = value_at(obj, path[:-1])
    if not found:
        return
    last = path[-1]
    if last.startswith("f:") and isinstance(parent, dict) and last[2:] in parent:
        del parent[last[2:]]
    elif isinstance(parent, list):
        found, item = _find(parent, last)
        if found:
            parent.remove(item)
    if parent in ({}, []) and len(path) > 1 and path[-2].startswith("f:"):
        _remove(obj, path[:-1])


def _merge(live, config, path: Path, kind: str):
    """``config`` applied over ``live``: mappings key by key, keyed lists entry by entry (new
    entries after the live ones), sets united, anything else replaced."""
    if isinstance(live, dict) and isinstance(config, dict) and not (path and _atomic(path, kind)):
        out = dict(live)
        for name, sub in config.items():
            out[name] = _merge(live.get(name), sub, path + (f"f:{name}",), kind) if name in live else copy.deepcopy(sub)
        return out
    if isinstance(live, list) and isinstance(config, list) and path:
        list_type = _list_type(path, path[-1][2:], kind)
        if list_type == "set":
            return live + [v for v in config if v not in live]
        if list_type:
            out = [copy.deepcopy(i) for i in live]
            for item in config:
                key = _entry_key(item, list_type)
                at = next((n for n, i in enumerate(out)
                           if isinstance(i, dict) and _entry_key(i, list_type) == key), None)
                if at is None:
                    out.append(copy.deepcopy(item))
                else:
                    out[at] = _merge(out[at], item, path + (key,), kind)
            return out
    return copy.deepcopy(config)


# -- label selectors ---------------------------------------------------------------------------

_TERM = re.compile(r"\s*(?:(?P<key>[^,!=\s()]+)\s*(?P<op>==|=|!=|\s+in\s+|\s+notin\s+)\s*(?P<value>\([^)]*\)|[^,\s]*)"
                   r"|(?P<not>!)?\s*(?P<exists>[^,!=\s()]+))\s*(?:,|$)")


def selects(selector: str | None, labels: dict) -> bool:
    """True when ``labels`` match the label selector ``selector`` (None: everything)."""
    if not selector:
        return True
    pos = 0
    while pos < len(selector):
        term = _TERM.match(selector, pos)
        if not term or term.end() == pos:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {selector!r}")
        pos = term.end()
        if term["exists"]:
            if (term["exists"] in labels) == bool(term["not"]):
                return False
            continue
        op, key = term["op"].strip(), term["key"]
        values = {v.strip() for v in term["value"].strip("()").split(",")} if op in ("in", "notin") else {term["value"]}
        have = labels.get(key)
        if (op in ("=", "==", "in") and have not in values) or (op in ("!=", "notin") and have in values):
            return False
    return True


# -- validation --------------------------------------------------------------------------------

def _modified(key: Key) -> ApiError:
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {key[1]} "{key[3]}": the object has been '
                                     "modified; please apply your changes to the latest version and try again")


def _invalid(key: Key, causes: list[str]) -> ApiError:
    return ApiError(422, "Invalid", f'{key[1]} "{key[3]}" is invalid: {"; ".join(causes)}')


def refusals(obj: dict, key: Key) -> list[str]:
    """Why the API server would refuse ``obj`` (a whole object to store): its name, and the
    fields its kind requires (``_kind_refusals``). Empty when it would store it."""
    name = key[3]
    pattern, limit = (LABEL, 63) if (key[0], key[1]) in LABEL_NAMED else (SUBDOMAIN, 253)
    causes = []
    if not name:
        causes.append("metadata.name: Required value: name or generateName is required")
    elif not pattern.match(name) or len(name) > limit:
        causes.append(f"metadata.name: Invalid value: {name!r}: must be a lowercase RFC 1123 "
                      f"{'label' if limit == 63 else 'subdomain'}")
    for label, value in ((obj.get("metadata") or {}).get("labels") or {}).items():
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            causes.append(f"metadata.labels: Invalid value: {value!r}")
    return causes + _kind_refusals(obj, key)


def _kind_refusals(obj: dict, key: Key) -> list[str]:
    spec = obj.get("spec") or {}
    causes = []
    if key[1] == "Deployment":
        selector = (spec.get("selector") or {}).get("matchLabels")
        template = spec.get("template") or {}
        pod_labels = (template.get("metadata") or {}).get("labels") or {}
        if not selector:
            causes.append("spec.selector: Required value")
        elif any(pod_labels.get(k) != v for k, v in selector.items()):
            causes.append("spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`")
        containers = (template.get("spec") or {}).get("containers") or []
        if not containers:
            causes.append("spec.template.spec.containers: Required value")
        for n, container in enumerate(containers):
            for required in ("name", "image"):
                if not container.get(required):
                    causes.append(f"spec.template.spec.containers[{n}].{required}: Required value")
    if key[1] == "Service":
        for n, port in enumerate(spec.get("ports") or []):
            if not isinstance(port.get("port"), int) or not 0 < port["port"] < 65536:
                causes.append(f"spec.ports[{n}].port: Required value")
    if key[1] == KIND and not isinstance(obj.get("spec"), dict):
        causes.append("spec: Required value")
    return causes


# -- the fake ----------------------------------------------------------------------------------

class FakeCluster:
    """An in-memory cluster (see the module docstring). ``crd``: the Application CRD is
    installed; ``status_subresource``: with its status subresource (``served``). Thread-safe."""

    def __init__(self, *, crd: bool = True, status_subresource: bool = True, dry_run: bool = False,
                 concurrency: int = 1, namespaces: tuple[str, ...] = ("default",)):
        self.crd, self.status_subresource = crd, status_subresource
        self.dry_run, self.concurrency = dry_run, concurrency
        self.objects: dict[Key, dict] = {}
        self.events: list[dict] = []
        self.writes: list[tuple[str, str]] = []  # (verb, subject) of every write request, in order
        self.requests: list[Request] = []  # every request (reads too; not the tests' own helpers), in order
        self.hooks: list[tuple[str | None, str | None, Hook]] = []  # (verb, kind, hook): ``on``
        self.warnings: dict[str, list[str]] = {}  # kind -> what admission warns of each write of it (``warn``)
        self._warned = threading.local()
        self._versions = itertools.count(1000)
        self._lock = threading.RLock()
        self._memo: share.Memo | None = None
        self._dry_namespaces: set[str] = set()
        self._dry_deleted: set[Key] = set()
        for name in namespaces:
            self.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    # -- test-side helpers (not verbs of a pass) -----------------------------------------------

    def add(self, obj: dict, manager: str = "kubectl-create", *, created: str | None = None) -> dict:
        """Store ``obj`` as created by ``manager`` (operation Update), whatever ``dry_run``;
        ``created``: its ``creationTimestamp`` (an object made before the test began; the API
        server stamps it, a client cannot)."""
        dry, self.dry_run = self.dry_run, False
        try:
            made = self._create(obj, manager)
        finally:
            self.dry_run = dry
        if created is not None:
            for stamped in (self.objects[key_of(made)], made):
                stamped["metadata"]["creationTimestamp"] = created
        return made

    def stored(self, kind: str, namespace: str, name: str, group: str | None = None) -> dict | None:
        """A copy of the stored object (group found from the kind when not given), or None."""
        group = group if group is not None else next(g for g, k in RESOURCES if k == kind)
        obj = self.objects.get((group, kind, namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    def of_kind(self, kind: str) -> list[dict]:
        """Copies of the stored objects of ``kind``, by namespace and name."""
        return [copy.deepcopy(o) for k, o in sorted(self.objects.items()) if k[1] == kind]

    def on(self, verb: str | None, kind: str | None, hook: Hook) -> None:
        """Run ``hook(request)`` before answering each ``verb`` request (a ``Cluster`` method name;
        None: every verb) of ``kind`` (None: every kind), after it is recorded in ``requests``.
        The hook raises an ``ApiError`` to answer with it (``ApiError(0, "Unreachable", ...)``
        as ``Kube`` raises for a server it cannot reach, 403 for a refusal), or changes the store
        (``put``, ``add``: what a controller does between two requests), or only looks."""
        self.hooks.append((verb, kind, hook))

    def fail(self, verb: str, subj: str, error: ApiError, times: int | None = 1) -> None:
        """The next ``times`` ``verb``s (apply, create, delete, patch_status, ...; None: every one)
        of ``subj`` (``Kind/namespace/name``) raise ``error``, as the API server's admission would
        (an ``on`` hook)."""
        left = [times]

        def hook(request: Request) -> None:
            if request.subject != subj or left[0] == 0:
                return
            if left[0] is not None:
                left[0] -= 1
            raise error

        self.on(verb, subj.partition("/")[0], hook)

    def warn(self, kind: str, *texts: str) -> None:
        """Every later write of ``kind`` is answered with ``texts`` as its ``Warning`` headers (as
        PodSecurity's ``warn`` mode answers a Deployment whose pods it would refuse)."""
        self.warnings[kind] = list(texts)

    def take_warnings(self) -> list[str]:
        """As ``Kube.take_warnings``: this thread's writes' warnings since the last call."""
        kept = getattr(self._warned, "texts", None) or []
        self._warned.texts = []
        return kept

    def put(self, obj: dict, manager: str = "kubectl-edit", subresource: str = "") -> dict:
        """An update (HTTP PUT) of the whole object, as ``kubectl edit`` or a controller sends it:
        ``metadata.resourceVersion`` current (409) when given, and given for an Application (422:
        a custom resource allows no unconditional update); the fields it adds or
        changes pass to ``manager`` (operation Update), the fields it drops leave every manager."""
        with self._lock:
            key = self._check(obj, "put")
            live = self._live(key)
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self._current(key, live, rv)
            elif (key[0], key[1]) == (GROUP, KIND):  # built-in kinds allow an unconditional update, a CRD's not
                raise _invalid(key, ["metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"])
            new = copy.deepcopy(obj)
            new["metadata"] = {**new["metadata"], **{k: live["metadata"][k] for k in STRIPPED
                                                     if k in live["metadata"] and k != "managedFields"}}
            if subresource == "status":
                new = {**copy.deepcopy(live), "status": new.get("status")}
            elif (key[0], key[1]) in STATUS_SUBRESOURCE:
                new = {k: v for k, v in new.items() if k != "status"}
                if "status" in live:
                    new["status"] = copy.deepcopy(live["status"])
            self._refuse(new, key, live)
            new["metadata"]["managedFields"] = self._updated(live, new, manager, subresource)
            return self._store(key, live, new)

    # -- reads ---------------------------------------------------------------------------------

    def get(self, obj: dict) -> dict | None:
        with self._lock:
            key = key_of(obj)
            self._served_or_404(key[0], key[1], "getting")
            self._request(Request("get", key[1], key[2], key[3]))
            if self.dry_run and key in self._dry_deleted:
                return None
            found = self.objects.get(key)
            return copy.deepcopy(found) if found is not None else None

    def list(self, group: str, kind: str, label_selector: str | None = None) -> list[dict]:
        return self._list("list", group, kind, None, label_selector)

    def list_in(self, group: str, kind: str, namespace: str, label_selector: str | None = None) -> list[dict]:
        return self._list("list_in", group, kind, namespace, label_selector)

    def list_unscoped(self, group: str, kind: str) -> list[dict]:
        return self._list("list_unscoped", group, kind, None, None)

    def _list(self, verb: str, group: str, kind: str, namespace: str | None, selector: str | None) -> list[dict]:
        with self._lock:
            self._served_or_404(group, kind, f"listing {kind}")
            self._request(Request(verb, kind, namespace or "", "", selector))
            api_version = RESOURCES[(group, kind)][0].split("/", 2)[-1]
            item = item_of(kind, api_version, share.Memo())
            return [item(copy.deepcopy(obj)) for key, obj in sorted(self.objects.items())
                    if key[:2] == (group, kind) and (namespace is None or key[2] == namespace)
                    and selects(selector, (obj["metadata"].get("labels") or {}))]

    def served(self, group: str, version: str) -> set[str]:
        if (group, version) == (GROUP, VERSION):
            return ({PLURAL} | ({f"{PLURAL}/status"} if self.status_subresource else set())) if self.crd else set()
        out = set()
        for (g, kind), (prefix, plural, _) in RESOURCES.items():
            if g == group and prefix.endswith(f"/{version}") and g != GROUP:
                out.add(plural)
                if (g, kind) in STATUS_SUBRESOURCE:
                    out.add(f"{plural}/status")
        return out

    @contextlib.contextmanager
    def sharing(self):
        self._memo = share.Memo()
        try:
            yield self
        finally:
            self._memo = None

    # -- writes --------------------------------------------------------------------------------

    def apply(self, obj: dict, force: bool = True, *, manager: str = AGENT_NAME) -> dict:
        """Server-side apply as ``manager``; returns the object as ``Kube.apply`` does."""
        with self._lock:
            key = self._check(obj, "apply")
            if self.dry_run and (key[2] in self._dry_namespaces or key in self._dry_deleted):
                return _as_if_stored(obj)
            live = self.objects.get(key)
            rv = obj["metadata"].get("resourceVersion")
            if rv and (live is None or rv != live["metadata"]["resourceVersion"]):
                raise _modified(key)
            config = copy.deepcopy(obj)
            if (key[0], key[1]) in STATUS_SUBRESOURCE:
                config.pop("status", None)
            if live is None:
                self._namespace_exists(key)
                new = self._fresh(config)
                owned = fieldset(config, key[1])
                new["metadata"]["managedFields"] = [_entry(manager, "Apply", obj["apiVersion"], owned)]
                self._refuse(new, key, None)
                stored = self._store(key, None, new)
            else:
                stored = self._store(key, live, self._applied(key, live, config, manager, force))
            out = registry.trim(fields.compact(stored))
            return self._memo.share(out) if self._memo is not None else out

    def _applied(self, key: Key, live: dict, config: dict, manager: str, force: bool) -> dict:
        """``live`` after ``manager``'s apply of ``config``: conflicts found (409 without
        ``force``, taken over with it), the fields ``manager`` no longer applies and nobody
        else owns removed, the rest merged in."""
        kind = key[1]
        wanted = fieldset(config, kind)
        entries = [dict(e, fieldsV1=paths_of(e.get("fieldsV1") or {}))
                   for e in live["metadata"].get("managedFields") or []]
        mine = next((e for e in entries if e["manager"] == manager and e["operation"] == "Apply"
                     and not e.get("subresource")), None)
        conflicts = {}
        for entry in entries:
            if entry is mine or entry.get("subresource"):
                continue
            for path in entry["fieldsV1"] & wanted:
                if path[-1] != "." and value_at(live, path) != value_at(config, path):
                    conflicts.setdefault(path, entry)
        if conflicts and not force:
            said = "; ".join(f'conflict with "{e["manager"]}": .{".".join(p[2:] for p in path)}'
                             for path, e in sorted(conflicts.items(), key=lambda kv: kv[0]))
            raise ApiError(409, "Conflict", f"Apply failed with {len(conflicts)} conflict(s): {said}")
        for path, entry in conflicts.items():
            entry["fieldsV1"].discard(path)
        others = set().union(*(e["fieldsV1"] for e in entries if e is not mine and not e.get("subresource")))
        new = _merge(live, config, (), kind)
        gone = (mine["fieldsV1"] if mine else set()) - wanted - others
        for path in sorted(gone, key=lambda p: len(p) - (p[-1] == ".")):  # a keyed entry before its fields
            if path[-1] == "." and any(o[:len(path) - 1] == path[:-1] for o in others | wanted):
                continue  # the entry stays: someone still owns a field of it
            _remove(new, path)
        _drop_empty(new.get("metadata") or {}, ("labels", "annotations"))
        if mine is None:
            mine = {"manager": manager, "operation": "Apply", "apiVersion": config["apiVersion"]}
            entries.append(mine)
        moved = mine.get("fieldsV1") != wanted
        mine["fieldsV1"] = wanted
        new["metadata"]["managedFields"] = _entries_out(entries, live, moved and mine)
        self._refuse(new, key, live)
        return new

    def create(self, obj: dict) -> dict:
        with self._lock:
            key = self._check(obj, "create")
            if self.dry_run and (key[2] in self._dry_namespaces or key in self._dry_deleted):
                return _as_if_stored(obj)
            made = self._create(obj, AGENT_NAME)
            if self.dry_run and key[1] == "Namespace":
                self._dry_namespaces.add(key[3])
            return made

    def _create(self, obj: dict, manager: str) -> dict:
        key = key_of(obj)
        self._served_or_404(key[0], key[1], "creating")
        if key in self.objects:
            raise ApiError(409, "AlreadyExists", f'{RESOURCES[key[:2]][1]} "{key[3]}" already exists')
        if obj["metadata"].get("resourceVersion"):
            raise _invalid(key, ["metadata.resourceVersion: Invalid value: must not be set on create"])
        self._namespace_exists(key)
        new = self._fresh(copy.deepcopy(obj))
        if (key[0], key[1]) in STATUS_SUBRESOURCE:
            new.pop("status", None)
        self._refuse(new, key, None)
        new["metadata"]["managedFields"] = [_entry(manager, "Update", obj["apiVersion"], fieldset(new, key[1]))]
        return self._store(key, None, new)

    def delete(self, obj: dict, propagation: str = "Background") -> bool:
        with self._lock:
            key = self._check(obj, "delete")
            live = self.objects.get(key)
            uid = obj["metadata"].get("uid")
            if live is None or (self.dry_run and key in self._dry_deleted) or (uid and live["metadata"]["uid"] != uid):
                return False  # Kube: 404 is None, a failed uid precondition (409) is False
            if self.dry_run:
                self._dry_deleted.add(key)
                return True
            self._gone(key, propagation)
            return True

    def _gone(self, key: Key, propagation: str) -> None:
        """Delete ``key`` now (or mark it, when finalizers hold it) and collect its dependents."""
        live = self.objects[key]
        if live["metadata"].get("finalizers"):
            live["metadata"].setdefault("deletionTimestamp", _now())
            live["metadata"]["resourceVersion"] = str(next(self._versions))
            return
        del self.objects[key]
        uid = live["metadata"]["uid"]
        for other_key, other in list(self.objects.items()):
            if other_key not in self.objects:
                continue
            if key[1] == "Namespace" and other_key[2] == key[3]:
                self._gone(other_key, propagation)
                continue
            refs = other["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid for r in refs):
                rest = [r for r in refs if r.get("uid") != uid]
                if propagation == "Orphan" or rest:
                    other["metadata"]["ownerReferences"] = rest
                    if not rest:
                        del other["metadata"]["ownerReferences"]
                    other["metadata"]["resourceVersion"] = str(next(self._versions))
                else:
                    self._gone(other_key, propagation)

    def patch_managed_fields(self, obj: dict, entries: list[dict]) -> dict:
        """A JSON patch that tests ``resourceVersion`` (422 when it moved) and replaces
        ``metadata.managedFields`` with ``entries`` as given."""
        with self._lock:
            key = self._check(obj, "patch_managed_fields")
            live = self._live(key)
            if obj["metadata"].get("resourceVersion") != live["metadata"]["resourceVersion"]:
                raise ApiError(422, "Invalid", "the server rejected our request due to an error in our request")
            new = copy.deepcopy(live)
            new["metadata"]["managedFields"] = copy.deepcopy(entries)
            return self._store(key, live, new)

    def patch_annotations(self, obj: dict, annotations: dict[str, str | None]) -> dict:
        """A JSON merge patch of ``metadata.annotations`` as ``gitops-agent`` (operation Update)."""
        with self._lock:
            key = self._check(obj, "patch_annotations")
            live = self._live(key)
            new = copy.deepcopy(live)
            merged = {**(new["metadata"].get("annotations") or {}), **annotations}
            new["metadata"]["annotations"] = {k: v for k, v in merged.items() if v is not None}
            _drop_empty(new["metadata"], ("annotations",))
            new["metadata"]["managedFields"] = self._updated(live, new, AGENT_NAME, "")
            return self._store(key, live, new)

    def patch_status(self, obj: dict, status: dict) -> dict:
        """A JSON merge patch of the status subresource (lists replaced whole, None removes) as
        ``gitops-agent`` (operation Update, subresource status). Not sent in a dry run."""
        if self.dry_run:
            return {**obj, "status": {k: v for k, v in status.items() if v is not None}}
        with self._lock:
            key = self._check(obj, "patch_status")
            if (key[0], key[1]) == (GROUP, KIND) and not self.status_subresource:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            live = self._live(key)
            new = copy.deepcopy(live)
            new["status"] = _merge_patch(new.get("status") or {}, status)
            new["metadata"]["managedFields"] = self._updated(live, new, AGENT_NAME, "status")
            return self._store(key, live, new)

    def wait_gone(self, obj: dict, timeout: float = 60.0, interval: float = 0.25) -> bool:
        """True when no object with ``obj``'s identity and uid is left; deletion is immediate
        here, so False (at once) only for an object finalizers hold."""
        current = self.get(obj)
        uid = obj["metadata"].get("uid")
        return current is None or bool(uid and current["metadata"].get("uid") != uid)

    def event(self, obj: dict, type_: str, reason: str, message: str) -> None:
        if self.dry_run:
            return
        with self._lock:
            meta = obj["metadata"]
            self.events.append({"kind": obj["kind"], "namespace": meta.get("namespace"), "name": meta["name"],
                                "uid": meta.get("uid", ""), "type": type_, "reason": reason,
                                "message": message[:1024]})

    # -- inside --------------------------------------------------------------------------------

    def _check(self, obj: dict, verb: str) -> Key:
        """``obj``'s key once its kind is served; records the write request (``writes`` and
        ``requests``; not ``put``, the tests' own) and runs the hooks ``on`` set for it."""
        key = key_of(obj)
        self._served_or_404(key[0], key[1], verb)
        if verb != "put":
            self.writes.append((verb, subject(key)))
        if verb in ("apply", "create") and self.warnings.get(key[1]):
            kept = getattr(self._warned, "texts", None)
            if kept is None:
                kept = self._warned.texts = []
            kept += [t for t in self.warnings[key[1]] if t not in kept]
        if verb != "put":
            self._request(Request(verb, key[1], key[2], key[3]))
        return key

    def _request(self, request: Request) -> None:
        """Record ``request`` and run the hooks ``on`` set for its verb and kind (one may raise)."""
        self.requests.append(request)
        for verb, kind, hook in list(self.hooks):
            if verb in (None, request.verb) and kind in (None, request.kind):
                hook(request)

    def _served_or_404(self, group: str, kind: str, what: str) -> None:
        if (group, kind) not in RESOURCES or ((group, kind) == (GROUP, KIND) and not self.crd):
            raise ApiError(404, "NotFound", f"the server does not serve {kind} ({group or 'core'})", what)

    def _live(self, key: Key) -> dict:
        live = self.objects.get(key)
        if live is None or (self.dry_run and key in self._dry_deleted):
            raise ApiError(404, "NotFound", f'{RESOURCES[key[:2]][1]} "{key[3]}" not found')
        return live

    def _current(self, key: Key, live: dict, rv: str) -> None:
        if rv != live["metadata"]["resourceVersion"]:
            raise _modified(key)

    def _namespace_exists(self, key: Key) -> None:
        if not key[2] or ("", "Namespace", "", key[2]) in self.objects or key[2] in self._dry_namespaces:
            return
        raise ApiError(404, "NotFound", f'namespaces "{key[2]}" not found')

    def _refuse(self, new: dict, key: Key, live: dict | None) -> None:
        causes = refusals(new, key)
        if live is not None and key[1] == "Deployment" and \
                (live.get("spec") or {}).get("selector") != (new.get("spec") or {}).get("selector"):
            causes.append("spec.selector: Invalid value: field is immutable")
        if causes:
            raise _invalid(key, causes)

    def _fresh(self, obj: dict) -> dict:
        obj["metadata"] = {**obj["metadata"], "uid": str(uuid.uuid4()), "creationTimestamp": _now()}
        if (obj["apiVersion"].rpartition("/")[0], obj["kind"]) in GENERATION:
            obj["metadata"]["generation"] = 1
        return obj

    def _updated(self, live: dict, new: dict, manager: str, subresource: str) -> list[dict]:
        """``live``'s managedFields after an update to ``new`` by ``manager``: the leaves added
        or changed pass to it, the leaves gone leave everyone."""
        kind = new["kind"]
        before, after = fieldset(live, kind), fieldset(new, kind)
        changed = {p for p in after if p not in before or value_at(live, p) != value_at(new, p)}
        entries = [dict(e, fieldsV1=paths_of(e.get("fieldsV1") or {}) & after)
                   for e in live["metadata"].get("managedFields") or []]
        for entry in entries:
            entry["fieldsV1"] -= changed
        mine = next((e for e in entries if e["manager"] == manager and e["operation"] == "Update"
                     and e.get("subresource", "") == subresource), None)
        if mine is None and changed:
            mine = {"manager": manager, "operation": "Update", "apiVersion": new["apiVersion"],
                    **({"subresource": subresource} if subresource else {}), "fieldsV1": set()}
            entries.append(mine)
        if mine is not None:
            mine["fieldsV1"] |= changed
        return _entries_out(entries, live, mine if changed else None)

    def _store(self, key: Key, live: dict | None, new: dict) -> dict:
        """Keep ``new`` (unless a dry run): resourceVersion moved when anything moved, generation
        when anything outside metadata and status did. Returns a copy as stored."""
        if live is not None and _content(live) == _content(new):
            return copy.deepcopy(live)  # a no-op write: nothing is stored, nothing moves
        if live is not None and "generation" in live["metadata"]:
            body = lambda o: {k: v for k, v in o.items() if k not in ("metadata", "status")}  # noqa: E731
            new["metadata"]["generation"] = live["metadata"]["generation"] + (body(live) != body(new))
        new["metadata"]["resourceVersion"] = str(next(self._versions))
        if not self.dry_run:
            self.objects[key] = new
        return copy.deepcopy(new)


def _content(obj: dict) -> dict:
    """``obj`` without what a no-op write would change (managedFields' times, resourceVersion)."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in ("resourceVersion",)}
    meta["managedFields"] = [{k: v for k, v in e.items() if k != "time"} for e in meta.get("managedFields") or []]
    return {**obj, "metadata": meta}


def _entry(manager: str, operation: str, api_version: str, paths: set[Path], subresource: str = "") -> dict:
    out = {"manager": manager, "operation": operation, "apiVersion": api_version, "time": _now(),
           "fieldsType": "FieldsV1", "fieldsV1": trie(paths)}
    if subresource:
        out["subresource"] = subresource
    return out


def _entries_out(entries: list[dict], live: dict, touched: dict | None) -> list[dict]:
    """Entries (``fieldsV1`` as path sets) back to managedFields: empty ones dropped, the
    ``touched`` one stamped now, the others keep their time."""
    old = {(e["manager"], e["operation"], e.get("subresource", "")): e
           for e in live["metadata"].get("managedFields") or []}
    out = []
    for entry in entries:
        if not entry["fieldsV1"]:
            continue
        ident = (entry["manager"], entry["operation"], entry.get("subresource", ""))
        stamp = _now() if entry is touched or ident not in old else old[ident].get("time", _now())
        out.append({**{k: v for k, v in entry.items() if k != "fieldsV1"}, "time": stamp, "fieldsType": "FieldsV1",
                    "fieldsV1": trie(entry["fieldsV1"])})
    return out


def _drop_empty(meta: dict, names: tuple[str, ...]) -> None:
    for name in names:
        if name in meta and not meta[name]:
            del meta[name]


def _merge_patch(target, patch):
    """RFC 7386: mappings merged key by key, None removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge_patch(out.get(key), value)
    return out


def _as_if_stored(obj: dict) -> dict:
    """As ``Kube`` answers a dry run into what only a dry run made: a copy with a placeholder uid."""
    stored = copy.deepcopy(obj)
    stored["metadata"].setdefault("uid", "00000000-0000-0000-0000-000000000000")
    return stored
