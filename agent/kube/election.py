"""Releasing the leader Lease on a clean stop, as client-go's ``ReleaseOnCancel`` does.

The ``kubernetes`` client's LeaderElection never gives its Lease back: after a replica stops, a
standby waits until the lease expires (``--lease-duration``, 15 s by default) before it takes
over, so every rollout leaves the agent without a leader for that long. client-go releases by
writing the Lease with an empty ``holderIdentity`` (and a one-second duration); a candidate
that reads a Lease without a holder takes it on its next try (the Python client treats a
missing holder as free), so the hand-over takes about one ``retry_period``.

Once released, the lock refuses every further create and update, so the election thread (which
cannot be stopped) can never take the Lease back; the same mutex orders a renewal in flight
before the release.

The Lease is also the mailbox of push webhooks that land on a standby (``forward``): the
standby writes a new token in the annotation ``PASS_REQUESTED_AT`` and answers 202; the leader
reads the Lease on every renewal anyway (every retry period, 2 s with the default 15 s lease),
and a token it has not seen asks it for a pass (``on_request``). No request is added, the RBAC
stays ``get``/``create``/``update`` on Leases, and a token written while no replica leads is
served by the next leader's first pass (it reads the Lease, then starts leading and passing).
The standby's write changes only metadata; a leader renewal that it made fail (409) is retried
at once against a fresh read when the election fields are still as read (``_replace``), so
webhook traffic never costs the lease.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from typing import Callable

from kubernetes.client.exceptions import ApiException
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from agent.api.labels import PASS_REQUESTED_AT

log = logging.getLogger("agent.run")
RELEASE_TIMEOUT = 2.0  # seconds per request: shutdown must finish within --shutdown-grace + 1 s
FORWARD_TIMEOUT = 4.0  # seconds per request of a forward: GitHub waits 10 s for an answer
FORWARD_TRIES = 4  # a forward's write that meets a renewal (409) is tried again on a fresh read
_UNREAD = object()  # the token before the first read of the Lease


def token_of(lease) -> str | None:
    """The ``PASS_REQUESTED_AT`` annotation of a V1Lease, None when absent."""
    return ((lease.metadata and lease.metadata.annotations) or {}).get(PASS_REQUESTED_AT)


def _election(spec) -> tuple:
    """The fields of a V1LeaseSpec the election reads and writes (holder, duration, times)."""
    if spec is None:
        return ()
    return (spec.holder_identity, spec.lease_duration_seconds, spec.acquire_time, spec.renew_time,
            spec.lease_transitions)


class ReleasableLeaseLock(LeaseLock):
    """``LeaseLock`` with ``release()`` (after it, ``create`` and ``update`` return False) and the
    webhook mailbox: ``forward()`` on a standby, ``on_request()`` (no arguments; its answer is
    ignored) called on the leader for each new token it reads."""

    def __init__(self, name: str, namespace: str, identity: str, on_request: Callable[[], object] | None = None):
        super().__init__(name, namespace, identity)
        self._guard = threading.Lock()
        self.released = False
        self.on_request = on_request
        self._token: object = _UNREAD
        self.renewed_at: float | None = None  # monotonic time a successful create or renewal was sent

    def get(self, name, namespace):
        found, record = super().get(name, namespace)
        if found:
            self._notice(self.lease_reference)
        return found, record

    def _notice(self, lease) -> None:
        """Call ``on_request`` when ``lease`` (just read) carries a token this replica has not
        read before and names this replica as holder. A token first read while another replica
        held the Lease (or none did) is not asked for: this replica's first pass as leader, which
        starts after that read, serves it."""
        token = token_of(lease)
        previous, self._token = self._token, token
        if previous is _UNREAD or token == previous or self.on_request is None:
            return
        if lease.spec is not None and lease.spec.holder_identity == self.identity:
            log.info("a standby forwarded a push webhook through the Lease %s/%s", self.namespace, self.name,
                     extra={"fields": {"event": "webhook_forwarded", "token": token}})
            self.on_request()

    def create(self, name, namespace, election_record):
        with self._guard:
            sent = time.monotonic()
            return self._renewed(sent, False if self.released else super().create(name, namespace, election_record))

    def update(self, name, namespace, updated_record):
        with self._guard:
            sent = time.monotonic()
            return self._renewed(sent, False if self.released else self._replace(name, namespace, updated_record))

    def _renewed(self, sent: float, done: bool) -> bool:
        """Record ``sent`` (monotonic) as the last renewal when ``done``; returns ``done``."""
        if done:
            self.renewed_at = sent
        return done

    def holds(self, renew_deadline: float) -> bool:
        """True while this replica can show it still holds the Lease: its last successful write
        of it was sent less than ``renew_deadline`` seconds ago on the monotonic clock, which
        runs on while the process is stopped (SIGSTOP, a frozen VM). The fence of every write
        (``Kube.fence``): a leader paused past its lease, whose Lease another replica took over,
        sends nothing until it renews, which it cannot (issue 46)."""
        return self.renewed_at is not None and time.monotonic() - self.renewed_at < renew_deadline

    def _replace(self, name, namespace, record) -> bool:
        """``LeaseLock.update``: write ``record`` into the Lease read last, with its
        resourceVersion. A conflict (409) whose fresh read shows the election fields unchanged
        (only a forward's annotation moved the resourceVersion) is written again once on that
        read; any other failure returns False, as the client's own update does."""
        lease = self.lease_reference
        if lease is None:
            return False
        as_read = _election(lease.spec)
        for attempt in range(2):
            lease.spec = self.get_lease_spec(record, lease.spec)
            try:
                self.api_instance.replace_namespaced_lease(name=name, namespace=namespace, body=lease)
                return True
            except ApiException as err:
                if err.status != 409 or attempt:
                    log.info("could not renew the leader lease %s/%s: %s %s", namespace, name, err.status, err.reason)
                    return False
            try:
                lease = self.api_instance.read_namespaced_lease(name, namespace)
            except ApiException:
                return False
            if _election(lease.spec) != as_read:
                return False  # another replica wrote the election itself: not ours to overwrite
            self._notice(lease)
            self.lease_reference = lease
        return False

    def forward(self) -> str | None:
        """Hand a push webhook to the leader: write a new token (UTC time and this identity) in
        the Lease's ``PASS_REQUESTED_AT`` annotation, keeping its spec and resourceVersion (a
        409, a renewal in between, is tried again on a fresh read, ``FORWARD_TRIES`` times).
        Returns None when written, else why not, one phrase (the Lease is missing, the API
        server refused or cannot be reached); each request waits at most FORWARD_TIMEOUT s."""
        where = f"the Lease {self.namespace}/{self.name}"
        now = datetime.datetime.now(datetime.timezone.utc)
        token = f"{now:%Y-%m-%dT%H:%M:%S.%fZ} {self.identity}"
        for _ in range(FORWARD_TRIES):
            try:
                lease = self.api_instance.read_namespaced_lease(self.name, self.namespace,
                                                                _request_timeout=FORWARD_TIMEOUT)
                lease.metadata.annotations = {**(lease.metadata.annotations or {}), PASS_REQUESTED_AT: token}
                self.api_instance.replace_namespaced_lease(self.name, self.namespace, lease,
                                                           _request_timeout=FORWARD_TIMEOUT)
                return None
            except ApiException as err:
                if err.status == 409:
                    continue
                if err.status == 404:
                    return f"{where} does not exist yet (no replica has led)"
                return f"the API server refused to update {where}: {err.status} {err.reason}"
            except Exception as err:  # noqa: BLE001 (urllib3 raises many kinds when unreachable)
                return f"the API server could not be reached to update {where}: {type(err).__name__}"
        return f"{where} changed under each of {FORWARD_TRIES} writes"

    def release(self) -> bool:
        """Give the Lease up when this identity holds it: holderIdentity empty, leaseDuration
        1 s, renewTime and acquireTime now, written with the read resourceVersion (a 409 is
        retried twice). Returns True when released; False when another replica holds it or the
        API server could not be reached (logged; the lease then simply expires). Each request
        waits at most RELEASE_TIMEOUT seconds."""
        self.released = True  # no write starts after this, even if a renewal holds the guard
        if not self._guard.acquire(timeout=RELEASE_TIMEOUT):
            log.warning("could not release the leader lease %s/%s: a renewal is still waiting for "
                        "the API server", self.namespace, self.name)
            return False
        try:
            for _ in range(3):
                try:
                    lease = self.api_instance.read_namespaced_lease(self.name, self.namespace,
                                                                    _request_timeout=RELEASE_TIMEOUT)
                    if lease.spec is None or lease.spec.holder_identity != self.identity:
                        return False
                    now = datetime.datetime.now(datetime.timezone.utc)
                    lease.spec.holder_identity = ""
                    lease.spec.lease_duration_seconds = 1
                    lease.spec.acquire_time = lease.spec.renew_time = now
                    self.api_instance.replace_namespaced_lease(self.name, self.namespace, lease,
                                                               _request_timeout=RELEASE_TIMEOUT)
                    log.info("released the leader lease %s/%s", self.namespace, self.name)
                    return True
                except ApiException as err:
                    if err.status == 409:
                        continue
                    log.warning("could not release the leader lease %s/%s: %s %s", self.namespace,
                                self.name, err.status, err.reason)
                    return False
                except Exception as err:  # noqa: BLE001 (urllib3 raises many kinds when unreachable)
                    log.warning("could not release the leader lease %s/%s: %s", self.namespace, self.name, err)
                    return False
            return False
        finally:
            self._guard.release()
