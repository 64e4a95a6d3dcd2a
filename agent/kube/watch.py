"""``run``'s watches: list, then watch from the list's resourceVersion, as client-go's reflector does.

Why list first: a watch started without a resourceVersion replays every existing object as an
ADDED event, and at start-up those replays started a second pass right after the first one, which
had read the same objects. The list's items are handed over whole (``on_list``), so the caller
can tell "nothing new" from "changed while we were away"; the watch then reports only what
happened after the list. A watch request lasts up to 30 seconds and the next resumes from the
last seen resourceVersion; after ``410 Gone`` (that version expired) or any other error it lists
again, and dropped connections reconnect with backoff.
"""

from __future__ import annotations

import json
import logging
import time

import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from agent.kube.client import path
from agent.kube.cluster import ApiError

log = logging.getLogger("agent.kube")


WATCH_SECONDS = 30
"""How long one watch request lasts (``timeoutSeconds``: the API server ends it then); the next
resumes from the last resourceVersion seen."""
READ_TIMEOUT = 60
"""Seconds a watch connection may stay silent before it is dropped and opened again (bookmarks
and the server's own end after ``WATCH_SECONDS`` come well within it)."""


def _opener(kube, group: str, kind: str):
    """A function ``(resource_version, label_selector) -> urllib3 response`` that opens one watch
    request of ``kind`` across all namespaces (``GET /api[s]/.../PLURAL?watch=true``) through
    ``kube``'s REST layer (its configuration and authentication). Why not the client's typed
    ``CoreV1Api``: importing it costs 21 MiB of ``run``'s memory for one call (issue 48)."""
    url = path(group, kind)

    def open_(resource_version: str | None, label_selector: str | None):
        query = [("watch", "true"), ("timeoutSeconds", str(WATCH_SECONDS)), ("allowWatchBookmarks", "true")]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if label_selector:
            query.append(("labelSelector", label_selector))
        req = kube.api.param_serialize("GET", url, query_params=query, header_params={"Accept": "application/json"},
                                       auth_settings=["BearerToken"])
        resp = kube.api.call_api(*req, _request_timeout=(5, READ_TIMEOUT)).response
        if not 200 <= resp.status <= 299:
            reason = resp.reason
            resp.release_conn()
            raise ApiException(status=resp.status, reason=reason)
        return resp
    return open_


def _events(resp):
    """The watch events of ``resp`` (one JSON object per line), as dicts with ``type`` and
    ``raw_object``."""
    for line in iter_resp_lines(resp):
        event = json.loads(line)
        event["raw_object"] = event.get("object")
        yield event


def run(kube, group: str, kind: str, label_selector: str | None, on_event, stop, on_list=None,
        store=None, relist_every: float | None = None) -> None:
    """Watch ``kind`` (Application, a child kind, Namespace) across all namespaces through
    ``kube`` (an ``agent.kube.client.Kube``) until ``stop`` (a threading.Event) is set. Blocks;
    run it in a thread.

    ``on_list(kind, items, first)``: after each list, with its items (dicts with apiVersion and
    kind; with a store, in its form: ``LiveStore.item``, not to be changed) and whether it is this
    watch's first. ``on_event(event_type, obj_dict)``: for each
    change after the list. ``store``: an ``agent.kube.livestore.LiveStore`` told of every list,
    event, bookmark and interruption. ``relist_every``: seconds after which the watch lists again
    once its current request ends (None: only after an error), bounding any divergence. Events
    are handed over as the API server's JSON (never the client's models: faster, and the same
    for every kind). Every list and watch request waits for the rate limit first."""
    open_ = _opener(kube, group, kind)
    backoff, resource_version, first, listed_at = 0.5, None, True, 0.0
    query = {"labelSelector": label_selector} if label_selector else None
    while not stop.is_set():
        if resource_version is not None and relist_every is not None and time.monotonic() - listed_at > relist_every:
            log.debug("watch of %s: periodic relist", kind)
            resource_version = None
        if resource_version is None:
            try:
                resource_version = _list(kube, group, kind, query, store, on_list, first)
            except ApiError as err:
                log.info("listing %s for the watch failed (%s); retrying in %.1fs", kind, err, backoff)
                stop.wait(backoff)
                backoff = min(backoff * 2, 10)
                continue
            listed_at = time.monotonic()
            first = False
        kube.throttle()  # each (re)connection is a request like any other
        resource_version, clean = _watch_once(open_, kind, label_selector, resource_version, on_event, stop, store)
        if clean:
            backoff = 0.5
        else:
            stop.wait(backoff)
            backoff = min(backoff * 2, 10)


def _list(kube, group: str, kind: str, query: dict | None, store, on_list, first: bool) -> str | None:
    """List ``kind``, hand the items to ``store`` and ``on_list``; the list's resourceVersion.
    Raises ``ApiError``. A function of its own so that nothing holds the items once handed over:
    the store replaces them one event at a time, and a reference kept in ``run`` until its next
    list was a second copy of every Application after a status sweep (issue 33)."""
    each = (lambda item: store.item(kind, item)) if store is not None else None  # kept as read: never whole
    data = kube.request("GET", path(group, kind), query=query, each=each) or {}
    items = data.get("items", [])
    for item in items:
        item.setdefault("apiVersion", data.get("apiVersion", "v1"))
        item.setdefault("kind", kind)
    resource_version = (data.get("metadata") or {}).get("resourceVersion")
    if store is not None:
        store.listed(kind, items, resource_version)
    if on_list is not None:
        on_list(kind, items, first)
    return resource_version


def _watch_once(open_, kind, label_selector, resource_version, on_event, stop, store):
    """One watch request from ``resource_version``: (the resourceVersion to go on from, whether
    it ended cleanly). None to go on from when it ended with an error (``410 Gone`` among them:
    list again); the last one seen when the connection dropped, during the TLS handshake too
    (reconnect from there)."""
    resp = None
    try:
        resp = open_(resource_version, label_selector)
        for event in _events(resp):
            if stop.is_set():
                break
            obj = event.get("raw_object")
            rv = ((obj or {}).get("metadata") or {}).get("resourceVersion") if isinstance(obj, dict) else None
            resource_version = rv or resource_version
            if event["type"] == "ERROR":  # a Status: 410 Gone when resource_version expired
                status = obj if isinstance(obj, dict) else {}
                raise ApiException(status=status.get("code"), reason=f"{status.get('reason')}: {status.get('message')}")
            if event["type"] == "BOOKMARK":
                if store is not None:
                    store.progress(kind, rv)
                continue
            if store is not None:
                store.event(kind, event["type"], obj)
            on_event(event["type"], obj)
        if store is not None:
            store.progress(kind, resource_version)  # ended cleanly: current up to here
        return resource_version, True
    except ApiException as err:
        if err.status == 0:  # no answer: the client's wrapping of a TLS failure (a connection cut
            # or refused during the handshake) is a dropped connection, not the API server's error
            log.info("watch of %s interrupted (%s); reconnecting", kind, " ".join(str(err.reason).split()))
            if store is not None:
                store.interrupted(kind, lost=False)
            return resource_version, False
        log.info("watch of %s ended (%s %s); re-listing", kind, err.status, err.reason)
        if store is not None:
            store.interrupted(kind, lost=True)
        return None, False
    except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
        log.info("watch of %s interrupted (%s); reconnecting", kind, err)
        if store is not None:
            store.interrupted(kind, lost=False)
        return resource_version, False
    finally:
        if resp is not None:  # as the client's Watch ends a stream: closed, then its connection back
            resp.close()
            resp.release_conn()
