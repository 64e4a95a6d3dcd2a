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

import logging
import re

import urllib3
from kubernetes import client, watch as k8s_watch
from kubernetes.client.exceptions import ApiException

from agent.kube.client import RESOURCES, ApiError, path

log = logging.getLogger("agent.kube")


def _lister(kube, group: str, kind: str):
    """The client function that lists (and, with ``watch``, watches) ``kind`` across all
    namespaces, and its leading arguments. A named group's resources share one generic path
    (``/apis/GROUP/VERSION/PLURAL``, the client's custom-objects call); the core group's are
    the typed ``CoreV1Api.list_<kind>_for_all_namespaces``."""
    prefix, plural, _ = RESOURCES[(group, kind)]
    if group:
        return client.CustomObjectsApi(kube.api).list_cluster_custom_object, (group, prefix.rsplit("/", 1)[1], plural)
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()
    return getattr(client.CoreV1Api(kube.api), f"list_{snake}_for_all_namespaces"), ()


def run(kube, group: str, kind: str, label_selector: str | None, on_event, stop, on_list=None) -> None:
    """Watch ``kind`` (Application or a child kind) across all namespaces through ``kube``
    (an ``agent.kube.client.Kube``) until ``stop`` (a threading.Event) is set. Blocks; run it in a thread.

    ``on_list(kind, items, first)``: after each list, with its items (dicts with apiVersion and
    kind) and whether it is this watch's first. ``on_event(event_type, obj_dict)``: for each
    change after the list. Every list and watch request waits for the rate limit first."""
    func, args = _lister(kube, group, kind)
    backoff, resource_version, first = 0.5, None, True
    query = {"labelSelector": label_selector} if label_selector else None
    while not stop.is_set():
        if resource_version is None:
            try:
                data = kube.request("GET", path(group, kind), query=query) or {}
            except ApiError as err:
                log.info("listing %s for the watch failed (%s); retrying in %.1fs", kind, err, backoff)
                stop.wait(backoff)
                backoff = min(backoff * 2, 10)
                continue
            items = data.get("items", [])
            for item in items:
                item.setdefault("apiVersion", data.get("apiVersion", "v1"))
                item.setdefault("kind", kind)
            resource_version = (data.get("metadata") or {}).get("resourceVersion")
            if on_list is not None:
                on_list(kind, items, first)
            first = False
        watcher = k8s_watch.Watch()
        kwargs = {"timeout_seconds": 30, "resource_version": resource_version, "allow_watch_bookmarks": True}
        if label_selector:
            kwargs["label_selector"] = label_selector
        try:
            kube.throttle()  # each (re)connection is a request like any other
            for event in watcher.stream(func, *args, **kwargs):
                if stop.is_set():
                    break
                backoff = 0.5
                if event["type"] != "BOOKMARK":
                    on_event(event["type"], event.get("raw_object"))
            resource_version = watcher.resource_version or resource_version
        except ApiException as err:
            resource_version = None  # 410 Gone or another error: list again
            log.info("watch of %s ended (%s %s); re-listing", kind, err.status, err.reason)
            stop.wait(backoff)
            backoff = min(backoff * 2, 10)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
            log.info("watch of %s interrupted (%s); reconnecting in %.1fs", kind, err, backoff)
            stop.wait(backoff)
            backoff = min(backoff * 2, 10)
        finally:
            watcher.stop()
