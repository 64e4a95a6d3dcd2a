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
"""

from __future__ import annotations

import datetime
import logging
import threading

from kubernetes.client.exceptions import ApiException
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

log = logging.getLogger("agent.run")
RELEASE_TIMEOUT = 2.0  # seconds per request: shutdown must finish within --shutdown-grace + 1 s


class ReleasableLeaseLock(LeaseLock):
    """``LeaseLock`` with ``release()``; after it, ``create`` and ``update`` return False."""

    def __init__(self, name: str, namespace: str, identity: str):
        super().__init__(name, namespace, identity)
        self._guard = threading.Lock()
        self.released = False

    def create(self, name, namespace, election_record):
        with self._guard:
            return False if self.released else super().create(name, namespace, election_record)

    def update(self, name, namespace, updated_record):
        with self._guard:
            return False if self.released else super().update(name, namespace, updated_record)

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
