"""The agent's only door to the cluster: list, server-side apply, delete, status and events.

Built on the official ``kubernetes`` client's configuration, authentication and REST layer,
speaking plain JSON dicts so the pure steps never see client model objects. Transient faults
(connection errors, 429 and 5xx answers) are retried with exponential backoff (``tenacity``);
everything else raises ``ApiError`` at once.

Every request (``request`` is the one door; each retry counts) and every watch (re)connection
first waits for a token of the client-side rate limit (``ratelimit.TokenBucket``, as client-go's
``--kube-api-qps``/``--kube-api-burst``); ``interrupt`` ends that wait at once. Unless the user
set one, the limit is lifted at the first answer that shows the API server's priority and
fairness (``ratelimit.FLOW_CONTROL_HEADER``), as Flux does. The client is
thread-safe and its urllib3 pool holds ``concurrency`` connections and more, for the parallel
writes of ``agent.engine.writes``.

With ``tenant_service_account=NAME`` (``--tenant-service-account``) every write of a child (a
child kind's resource in a namespace: apply, create, delete, the managedFields and annotation
patches) is sent as the ServiceAccount NAME of that namespace (``Impersonate-User:
system:serviceaccount:NAMESPACE:NAME``, as Flux's ``--default-service-account``), so that
namespace's RBAC bounds what Git can make there. Applications, their status, Events, Namespaces
and every read stay the agent's own. A refusal (403) says which ServiceAccount was refused.

With ``dry_run=True`` every write is a server-side dry run (``dryRun=All``): the API server
validates, defaults and admits it and answers with the object it would store, but stores
nothing. Events and status writes are skipped entirely (no request), so a dry-run pass leaves
no trace in the cluster.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import re
import threading
import time
import uuid
from typing import Callable

import tenacity
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from agent.api.labels import AGENT_NAME
from agent.api.schema import GROUP, PLURAL, VERSION
from agent.kinds import fields, registry
from agent.kube import clusterconfig, listread, share, warnheader
from agent.kube.cluster import ApiError, NoConfiguration  # noqa: F401 (re-exported: callers import them from here)
from agent.kube.kubecreds import without_password
from agent.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS, FLOW_CONTROL_HEADER, TokenBucket

log = logging.getLogger("agent.kube")
retry_log = logging.getLogger("agent.retry")  # shown at INFO even when sync logs only warnings

# (group, kind) -> (API prefix, resource plural, namespaced): every child kind of the registry, and the rest
RESOURCES = {
    **{(k.group, k.kind): (k.api_prefix, k.plural, True) for k in registry.CHILD_KINDS},
    (GROUP, "Application"): (f"/apis/{GROUP}/{VERSION}", PLURAL, True),
    ("", "Namespace"): ("/api/v1", "namespaces", False),
    ("", "Event"): ("/api/v1", "events", True),
    ("", "Pod"): ("/api/v1", "pods", True),  # read only: get and explain, and the status page's watch
    ("batch", "Job"): ("/apis/batch/v1", "jobs", True),  # read only: the schedules' runs, for the status
}
TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
CHILD_RESOURCES = frozenset((k.api_prefix, k.plural) for k in registry.CHILD_KINDS)
IMPERSONATE_HEADER = "Impersonate-User"
_NAMESPACED = re.compile(r"(/apis?(?:/[^/]+)?/[^/]+)/namespaces/([^/]+)/([^/]+)")


def tenant_of(method: str, url_path: str, account: str | None) -> tuple[str, str] | None:
    """(namespace, user) a request is sent as with ``--tenant-service-account`` ``account``: a write
    (``WRITE_METHODS``) to a child kind's resource in a namespace goes as
    ``system:serviceaccount:NAMESPACE:ACCOUNT``; None for anything else (the agent itself)."""
    if account is None or method not in WRITE_METHODS:
        return None
    found = _NAMESPACED.match(url_path)
    if found is None or (found.group(1), found.group(3)) not in CHILD_RESOURCES:
        return None
    return found.group(2), f"system:serviceaccount:{found.group(2)}:{account}"
WRITE_METHODS = frozenset({"PATCH", "POST", "PUT", "DELETE"})
WARNING_HEADER = "Warning"
REQUEST_TIMEOUT = (5, 30)  # seconds: (connect, read)


def _text(body: bytes) -> str:
    """The start of an answer's body as one line of text, for an error message."""
    return " ".join(body[:200].decode("utf-8", "replace").split())


def _unreachable(host: str, err: BaseException, proxy: str | None = None) -> str:
    """Why ``host`` (the server URL) could not be reached, in words: the operating system's
    reason found in ``err``'s chain of causes (``cannot connect to https://127.0.0.1:6443:
    Connection refused``), else ``err`` as urllib3 words it (a timeout, a TLS fault). urllib3
    wraps the socket's error as ``HTTPSConnection(host=..., port=...): Failed to establish a new
    connection: [Errno 111] Connection refused``, which says the same less plainly. When the
    request went through ``proxy`` and the proxy is what failed (urllib3's ``ProxyError``), the
    proxy is named (``... through the proxy http://proxy:3128: Connection refused``; its password
    shown as ``***``)."""
    causes, seen, cause = [], set(), err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__ or getattr(cause, "reason", None)
        cause = cause if isinstance(cause, BaseException) else None
    failed = next((c for c in causes if isinstance(c, urllib3.exceptions.ProxyError)), None)
    via = f" through the proxy {without_password(str(proxy))}" if proxy and failed is not None else ""
    for cause in causes:
        if isinstance(cause, OSError) and not isinstance(cause, urllib3.exceptions.HTTPError) \
                and isinstance(cause.strerror, str) and cause.strerror:
            return f"cannot connect to {host}{via}: {cause.strerror}"
    if via:
        return f"cannot connect to {host}{via}: {' '.join(str(failed.original_error).split())}"
    return " ".join(str(err).split())


class Fenced(ApiError):
    """A write refused before it was sent: this replica cannot show it still leads
    (``election.ReleasableLeaseLock.holds``). Status 0, so the pass stops as on a lost
    connection; never retried."""


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, ApiError) and not isinstance(exc, Fenced) and (exc.status == 0 or exc.status in TRANSIENT_STATUS)


def _log_retry(retry_state: tenacity.RetryCallState) -> None:
    """tenacity ``before_sleep``: one INFO line per retry saying what failed and when the next
    try is (wall-clock time and seconds from now)."""
    wait = retry_state.next_action.sleep if retry_state.next_action else 0.0
    at = (datetime.datetime.now() + datetime.timedelta(seconds=wait)).strftime("%H:%M:%S")
    err = retry_state.outcome.exception() if retry_state.outcome else None
    retry_log.info("%s; retrying in %.1fs (at %s, attempt %d)", err, wait, at, retry_state.attempt_number + 1,
                   extra={"fields": {"event": "retry", "attempt": retry_state.attempt_number + 1,
                                     "retry_in_seconds": round(wait, 2)}})


def path(group: str, kind: str, namespace: str | None = None, name: str | None = None,
         subresource: str | None = None) -> str:
    """REST path for a kind in ``RESOURCES``; all namespaces when ``namespace`` is None."""
    prefix, plural, namespaced = RESOURCES[(group, kind)]
    parts = [prefix]
    if namespaced and namespace:
        parts += ["namespaces", namespace]
    parts.append(plural)
    if name:
        parts.append(name)
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


def _path_of(obj: dict, subresource: str | None = None) -> str:
    group = obj["apiVersion"].rpartition("/")[0]
    meta = obj["metadata"]
    return path(group, obj["kind"], meta.get("namespace"), meta["name"], subresource)


def item_of(kind: str, api_version: str, memo: share.Memo | None):
    """What ``list`` makes of each item as it is read: apiVersion and kind set (list items omit
    them), managedFields compacted (``fields.compact``), a Deployment's conditions cut to what
    health reads (``registry.trim``) and equal parts shared (``share``; not without a ``memo``:
    ``run``'s store packs what it keeps, ``agent.kube.packed``): a pass holds every listed
    object."""
    def item(obj: dict) -> dict:
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
        trimmed = registry.trim(fields.compact(obj))
        return memo.share(trimmed) if memo is not None else trimmed
    return item


def _as_if_stored(obj: dict) -> dict:
    """``obj`` as a dry run reports it when the server cannot be asked (its namespace or its
    deleted predecessor exists only in the dry run): a copy with a placeholder uid."""
    stored = json.loads(json.dumps(obj))
    stored["metadata"].setdefault("uid", "00000000-0000-0000-0000-000000000000")
    return stored



_PAIR = re.compile(r"(?<!\\)((?:\\\\)*)\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})")
"""A surrogate pair escape of ``json.dumps`` (not itself escaped: an even run of backslashes before it)."""


def apply_body(obj: dict) -> bytes:
    """``obj`` as the body of a server-side apply (``application/apply-patch+yaml``): JSON, which is
    YAML, ASCII but for the characters beyond the Basic Multilingual Plane (an emoji in an env
    value), written as themselves in UTF-8. ``json.dumps`` writes such a character as a surrogate
    pair (``\\ud83d\\ude80``), which the API server's YAML reader refuses ("found invalid Unicode
    character escape code", HTTP 400; ``kubectl apply`` sends it as itself). The other characters
    stay escaped: a raw U+2028 or U+0085 inside a quoted YAML scalar may be read as a line break.
    Lone surrogates never get here: the manifest loader refuses them (``nodes.text_ok``)."""
    text = _PAIR.sub(lambda m: m.group(1) + chr(0x10000 + ((int(m.group(2), 16) - 0xD800) << 10)
                                              + int(m.group(3), 16) - 0xDC00), json.dumps(obj))
    return text.encode("utf-8")


class Kube:
    """A connection to one cluster.

    ``kubeconfig``/``context`` select a kubeconfig file and context; with neither, the
    in-cluster service account is tried first, then the default kubeconfig (``~/.kube/config``
    or ``$KUBECONFIG``), as kubectl does. Raises ``ApiError`` (status 0) when no configuration
    can be loaded. ``dry_run``: send writes as server-side dry runs and skip events and status
    writes (see the module docstring). ``concurrency``: how many requests a pass may have in
    flight (``agent.engine.writes``); the connection pool holds that many plus the watches'.
    ``qps``/``burst``: the client-side rate limit (``agent.kube.ratelimit.TokenBucket``) every
    request passes, each retry and each watch (re)connection included; ``on_wait(seconds)``,
    when set, is told how long each request waited for it (the Prometheus metric). With both
    None (neither given), Flux's 50/300 holds until an answer carries the server's
    flow-control header, and is then lifted (``limit_auto`` until then). ``namespace``: the
    namespace a command without ``-n`` works in, as kubectl picks it (``clusterconfig.load``).
    ``retry_seconds``: how long transient faults are retried; ``retry_unreachable`` False: a
    request that got no answer (connection refused, a host that does not resolve, a timeout) is
    not retried, as kubectl does not (the read-only commands).
    """

    def __init__(self, kubeconfig: str | None = None, context: str | None = None,
                 retry_seconds: float = 20.0, dry_run: bool = False, *, concurrency: int = 1,
                 qps: float | None = None, burst: int | None = None, retry_unreachable: bool = True,
                 tenant_service_account: str | None = None):
        self.dry_run = dry_run
        self.tenant_service_account = tenant_service_account
        self.concurrency = concurrency
        self.limiter = TokenBucket(DEFAULT_QPS if qps is None else qps, DEFAULT_BURST if burst is None else burst)
        self.limit_auto = qps is None and burst is None  # lifted by the server's flow control
        self._lift_lock = threading.Lock()
        self.on_wait = None  # callable(seconds) or None
        self._dry_namespaces: set[str] = set()  # namespaces a dry run "created"
        self._dry_deleted: set[str] = set()  # paths of objects a dry run "deleted"
        self._memo: share.Memo | None = None  # a pass's shared parts (``sharing``)
        self._warned = threading.local()  # this thread's writes' Warning headers (``take_warnings``)
        configuration = client.Configuration()
        try:
            self.namespace = clusterconfig.load(configuration, kubeconfig, context)
        except clusterconfig.ConfigError as err:
            where = f" from {kubeconfig}" if kubeconfig else ""
            raise NoConfiguration(str(err), f"loading the cluster configuration{where}") from None
        configuration.retries = False
        # urllib3 keeps this many connections per host: one per parallel write, plus the watches
        # of ``run`` (Applications and each child kind) and a spare, so no request waits for or
        # discards a connection.
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0,
                                                    concurrency + len(registry.CHILD_KINDS) + 2)
        self.api = client.ApiClient(configuration)
        self.interrupt = threading.Event()  # set on shutdown: retries and waits end at once
        self.fence: Callable[[], bool] | None = None  # run with leader election: False refuses every write
        self._retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(
                lambda exc: _transient(exc) and (retry_unreachable or getattr(exc, "status", 0) != 0)),
            wait=tenacity.wait_exponential(multiplier=0.2, max=5),
            stop=tenacity.stop_after_delay(retry_seconds) | (lambda _state: self.interrupt.is_set()),
            sleep=self.interrupt.wait,
            before_sleep=_log_retry,
            reraise=True,
        )

    def close(self) -> None:
        self.api.close()

    # -- raw request -------------------------------------------------------------------------

    def request(self, method: str, url_path: str, *, body=None, query=None,
                content_type: str = "application/json", each=None) -> dict | None:
        """One API request with transient-fault retries; returns the JSON body as a dict,
        or None for 404 on GET/DELETE. Raises ApiError otherwise. ``each(item) -> item``: the
        answer is a list, read item by item as it arrives and each item replaced by what ``each``
        returns (``listread``; a list is never whole in memory). In a dry run every write
        (PATCH, POST, PUT, DELETE), whichever verb method sends it, carries ``dryRun=All``."""
        if self.dry_run and method in WRITE_METHODS:
            query = {**(query or {}), "dryRun": "All"}
            if method == "DELETE" and isinstance(body, dict):  # DeleteOptions in a body win
                body = {**body, "dryRun": ["All"]}
        return self._retrying.copy()(self._request_once, method, url_path, body, query, content_type, each)

    def throttle(self) -> None:
        """Wait for the rate limit's token (at once on ``interrupt``) and report the wait."""
        waited = self.limiter.wait(self.interrupt)
        if self.on_wait is not None:
            self.on_wait(waited)

    def _lift_limit(self) -> None:
        with self._lift_lock:  # parallel answers: one log line
            if not self.limit_auto:
                return
            self.limit_auto = False
        self.limiter.lift()
        log.info("the API server has API Priority and Fairness: no client-side rate limit "
                 "(--kube-api-qps or --kube-api-burst sets one)")

    def _note_warnings(self, header: str | None) -> None:
        """Keep the warnings of one write's answer (``warnheader.parse``) for ``take_warnings``."""
        found = warnheader.parse(header)
        if found:
            kept = getattr(self._warned, "texts", None)
            if kept is None:
                kept = self._warned.texts = []
            kept += [text for text in found if text not in kept][:warnheader.MAX_WARNINGS - len(kept)]

    def take_warnings(self) -> list[str]:
        """The texts of the ``Warning`` headers (``warnheader.parse``: code 299, each once, at
        most ``warnheader.MAX_WARNINGS``) of the writes this thread sent since its last call, and
        forget them: what admission (PodSecurity's ``warn`` mode, a deprecated API) said of them."""
        kept = getattr(self._warned, "texts", None) or []
        self._warned.texts = []
        return kept

    def _request_once(self, method, url_path, body, query, content_type, each=None):
        what = f"{method} {url_path}"
        self.throttle()
        if method in WRITE_METHODS and self.fence is not None and not self.fence():
            raise Fenced(0, "NotLeader", "not sent: this replica has not renewed its leader Lease within the renew "
                         "deadline, so another may lead; no write is sent until it renews", what)
        headers = {"Accept": "application/json", "Content-Type": content_type}
        tenant = tenant_of(method, url_path, self.tenant_service_account)
        if tenant is not None:
            headers[IMPERSONATE_HEADER] = tenant[1]
        req = self.api.param_serialize(method, url_path, query_params=list((query or {}).items()),
                                       header_params=headers, body=body, auth_settings=["BearerToken"])
        try:
            resp = self.api.call_api(*req, _request_timeout=REQUEST_TIMEOUT)
            if self.limit_auto and resp.getheader(FLOW_CONTROL_HEADER):
                self._lift_limit()
            if method in WRITE_METHODS and 200 <= resp.status <= 299:
                self._note_warnings(resp.getheader(WARNING_HEADER))
            if each is not None and resp.status == 200:
                try:
                    return listread.read(resp.response.read, each)
                except listread.Unreadable as err:
                    raise ApiError(resp.status, "Unreadable", f"the list could not be read: {err}", what) from None
                finally:
                    resp.response.release_conn()
            resp.read()
        except ApiException as err:  # raised by the REST layer for TLS/protocol faults
            detail = " ".join(str(err.reason or err.body or err).split())
            if not err.status:
                raise ApiError(0, "Unreachable", detail, what) from err
            raise ApiError(err.status, "Error", detail, what) from err
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise ApiError(0, "Unreachable", _unreachable(self.api.configuration.host, err,
                                                                 self.api.configuration.proxy), what) from err
        if resp.status == 404 and method in ("GET", "DELETE"):
            return None
        try:
            data = json.loads(resp.data) if resp.data else {}
        except ValueError:  # "404 page not found" for a group it does not serve, a proxy's HTML page
            data = None
        if not 200 <= resp.status <= 299:
            if not isinstance(data, dict):
                raise ApiError(resp.status, "", _text(resp.data), what)
            message = data.get("message", _text(resp.data))
            if tenant is not None and resp.status == 403:
                message = (f"{message} (written as ServiceAccount {tenant[0]}/{self.tenant_service_account}, "
                           "--tenant-service-account: that namespace's RBAC does not allow it)")
            raise ApiError(resp.status, data.get("reason", ""), message, what)
        if not isinstance(data, dict):
            raise ApiError(resp.status, "Unreadable", f"the answer is not JSON: {_text(resp.data)}", what)
        return data

    # -- verbs -------------------------------------------------------------------------------

    def get(self, obj: dict) -> dict | None:
        """The live object with ``obj``'s identity, or None when it does not exist (in a dry
        run also when the dry run deleted it)."""
        if self.dry_run and _path_of(obj) in self._dry_deleted:
            return None
        return self.request("GET", _path_of(obj))

    def list(self, group: str, kind: str, label_selector: str | None = None) -> list[dict]:
        """Every object of a kind across all namespaces, each with apiVersion and kind set
        (list items omit them). Raises ApiError, so a caller can tell "none" from "unknown"."""
        query = {"labelSelector": label_selector} if label_selector else None
        data = self.request("GET", path(group, kind), query=query, each=self._item(group, kind))
        if data is None:
            raise ApiError(404, "NotFound", f"the server does not serve {kind} ({group or 'core'})",
                           f"listing {kind}")
        return data.get("items") or []

    def list_in(self, group: str, kind: str, namespace: str, label_selector: str | None = None) -> list[dict]:
        """Every object of a namespaced kind in ``namespace`` (all of them when no label
        selector is given), as ``list`` returns them; empty for a namespace that does not
        exist. Raises ApiError."""
        query = {"labelSelector": label_selector} if label_selector else None
        data = self.request("GET", path(group, kind, namespace), query=query, each=self._item(group, kind))
        if data is None:
            raise ApiError(404, "NotFound", f"the server does not serve {kind} ({group or 'core'})",
                           f"listing {kind} in {namespace}")
        return data.get("items") or []

    def list_unscoped(self, group: str, kind: str) -> list[dict]:
        """Every object of a kind across all namespaces, as ``list``, and never narrowed by a
        wrapper's scope (``--allowed-namespaces`` hides the objects outside from ``list``): for a
        check against other tenants' objects (an Ingress host another namespace serves). Read
        only: nothing it returns is planned or pruned. Raises ApiError."""
        return self.list(group, kind)

    def _item(self, group: str, kind: str):
        api_version = RESOURCES[(group, kind)][0].split("/", 2)[-1]  # "/apis/apps/v1" -> apps/v1, "/api/v1" -> v1
        # a list's own memo, dropped after it: one memo for a pass's lists kept more (what only
        # one object uses) than sharing across kinds saved (87 against 83 MiB at 2,000 Applications)
        return item_of(kind, api_version, share.Memo())

    @contextlib.contextmanager
    def sharing(self):
        """Within it (one pass), the objects ``apply`` returns share equal parts with each other
        (one ``share.Memo``; see that module): a pass holds what it applied. The items of one
        list always share parts with each other (a memo per list). Parallel writes share through
        the one memo one at a time (its lock)."""
        self._memo = share.Memo()
        try:
            yield self
        finally:
            self._memo = None

    def apply(self, obj: dict, force: bool = True) -> dict:
        """Server-side apply ``obj`` with field manager ``gitops-agent``; returns the live
        object, its managedFields compacted, a Deployment's conditions cut (``registry.trim``)
        and, within ``sharing``, its parts shared with the pass's other applied objects (a pass
        holds what it applied). ``force`` takes over fields another manager set (drift is
        undone)."""
        query = {"fieldManager": AGENT_NAME, "force": "true" if force else "false"}
        if self.dry_run:
            if obj["metadata"].get("namespace") in self._dry_namespaces or _path_of(obj) in self._dry_deleted:
                return _as_if_stored(obj)  # the server cannot dry-run into what a dry run only imagined
        applied = registry.trim(fields.compact(self.request("PATCH", _path_of(obj), body=apply_body(obj), query=query,
                                                          content_type="application/apply-patch+yaml")))
        return self._memo.share(applied) if self._memo is not None else applied

    def create(self, obj: dict) -> dict:
        """Create ``obj`` (POST to its collection); returns the created object."""
        meta = obj["metadata"]
        group = obj["apiVersion"].rpartition("/")[0]
        query = {"fieldManager": AGENT_NAME}
        if self.dry_run:
            if meta.get("namespace") in self._dry_namespaces or _path_of(obj) in self._dry_deleted:
                return _as_if_stored(obj)  # as in apply: it exists only in the dry run
        made = self.request("POST", path(group, obj["kind"], meta.get("namespace")), body=obj, query=query)
        if self.dry_run and obj["kind"] == "Namespace":  # only once the server said it could be made
            self._dry_namespaces.add(meta["name"])
        return made

    def delete(self, obj: dict, propagation: str = "Background") -> bool:
        """Delete ``obj`` with ``propagation`` (``Background``, ``Foreground`` or ``Orphan``; see
        ``guards.propagation``), preconditioned on its UID when known so a newer object of the
        same name is never deleted. Returns False if it was already gone."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}
        uid = obj["metadata"].get("uid")
        if uid:
            body["preconditions"] = {"uid": uid}
        if self.dry_run:  # request() marks it dryRun=All; remember it as gone for this pass
            self._dry_deleted.add(_path_of(obj))
        try:
            return self.request("DELETE", _path_of(obj), body=body) is not None
        except ApiError as err:
            if err.status == 409 and uid:  # precondition failed: a different object now
                return False
            raise

    def patch_managed_fields(self, obj: dict, entries: list[dict]) -> dict:
        """Replace ``obj``'s ``metadata.managedFields`` with ``entries`` (a JSON patch that
        first tests ``resourceVersion``, so a write that raced another one fails with 409 or
        422 instead of losing it). The object's content is unchanged; the API server stores
        managedFields given explicitly in a request as they are. Returns the object."""
        meta = obj["metadata"]
        body = [{"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
                {"op": "replace", "path": "/metadata/managedFields", "value": entries}]
        return self.request("PATCH", _path_of(obj), body=body, query={"fieldManager": AGENT_NAME},
                            content_type="application/json-patch+json")

    def patch_annotations(self, obj: dict, annotations: dict[str, str | None]) -> dict:
        """Set (or, for None, remove) ``annotations`` on ``obj`` with a JSON merge patch, as
        field manager ``gitops-agent`` (operation Update): other annotations are left as they
        are, and the agent's server-side apply (operation Apply) never drops what this wrote.
        Returns the object as the server stored it (dry run: as the server would)."""
        return self.request("PATCH", _path_of(obj), body={"metadata": {"annotations": annotations}},
                            query={"fieldManager": AGENT_NAME}, content_type="application/merge-patch+json")

    def wait_gone(self, obj: dict, timeout: float = 60.0, interval: float = 0.25) -> bool:
        """Poll until the object with ``obj``'s identity and UID no longer exists (a newer
        object of the same name counts as gone). Returns False after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        uid = obj["metadata"].get("uid")
        while True:
            current = self.get(obj)
            if current is None or (uid and current["metadata"].get("uid") != uid):
                return True
            if time.monotonic() > deadline or self.interrupt.wait(interval):
                return False

    def patch_status(self, obj: dict, status: dict) -> dict:
        """Write ``status`` through the status subresource (JSON merge patch; lists replace
        whole), as field manager ``gitops-agent`` (operation Update). Returns the object as the server stored it. In a dry run nothing is sent and
        the object is returned with the patched status (null removes a field), as if stored."""
        if self.dry_run:
            return {**obj, "status": {k: v for k, v in status.items() if v is not None}}
        return self.request("PATCH", _path_of(obj, "status"), body={"status": status},
                            query={"fieldManager": AGENT_NAME}, content_type="application/merge-patch+json")

    def served(self, group: str, version: str) -> set[str]:
        """Names of the resources and subresources (``applications``, ``applications/status``)
        the API server serves in ``group/version``, from API discovery; empty when the group
        version is not served (e.g. the CRD is not installed or not yet established)."""
        data = self.request("GET", f"/apis/{group}/{version}")
        return {r.get("name") for r in (data or {}).get("resources", [])}

    def event(self, obj: dict, type_: str, reason: str, message: str) -> None:
        """Record a core/v1 Event on ``obj`` (type Normal or Warning). Failures are logged,
        never raised: events are informational. Nothing is sent in a dry run."""
        if self.dry_run:
            return
        meta = obj["metadata"]
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:12]}", "namespace": meta["namespace"]},
            "involvedObject": {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"],
                               "namespace": meta["namespace"], "uid": meta.get("uid", "")},
            "type": type_, "reason": reason, "message": message[:1024],
            "source": {"component": AGENT_NAME}, "reportingComponent": AGENT_NAME,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }
        try:
            self.create(event)
        except ApiError as err:
            log.warning("could not record event %s on %s: %s", reason, meta["name"], err)

    # -- between passes ----------------------------------------------------------------------
    # The watches of ``run`` live in ``agent/kube/watch.py`` (list, then watch from its resourceVersion).

    def elect(self, name: str, namespace: str, identity: str, on_started, on_stopped,
              lease_duration: int = 15, renew_deadline: int = 10, retry_period: int = 2, on_request=None):
        """Start leader election on the Lease ``namespace/name`` (coordination.k8s.io) with the
        client's own LeaseLock, in a daemon thread. ``on_started()`` runs when this process
        leads; ``on_stopped()`` when it lost the lease. Durations in seconds; a new leader takes
        over within about ``lease_duration`` + ``retry_period`` after the old one dies, and
        within about ``retry_period`` after it calls ``release()`` on the returned handle
        (see ``election.ReleasableLeaseLock``). ``on_request()``: called on the leader when a
        standby forwarded a push webhook (the handle's ``forward()``), within a retry period."""
        from kubernetes.leaderelection import electionconfig, leaderelection

        from agent.kube.election import ReleasableLeaseLock

        # The lease is renewed through the client's own requests, outside the rate limit: a
        # renewal must never queue behind a pass's writes and lose the lease.
        client.Configuration.set_default(self.api.configuration)
        lock = ReleasableLeaseLock(name, namespace, identity, on_request)
        cfg = electionconfig.Config(lock, lease_duration, renew_deadline, retry_period, on_started, on_stopped)
        threading.Thread(target=leaderelection.LeaderElection(cfg).run, name="leader-election",
                         daemon=True).start()
        return lock
