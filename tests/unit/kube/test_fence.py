"""The leader's write fence (issue 46): a replica that cannot show it still holds its Lease (its
last renewal older than the renew deadline on the monotonic clock) sends no write; reads go on."""

from __future__ import annotations

import time

import pytest

from agent.kube.client import Fenced, Kube
from agent.kube.election import ReleasableLeaseLock
from tests.unit.kube.test_kube_limits import answering, kubeconfig  # noqa: F401 (fixture)

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}


def lock_renewed(seconds_ago: float | None) -> ReleasableLeaseLock:
    lock = ReleasableLeaseLock.__new__(ReleasableLeaseLock)  # no API client: only the clock is read
    lock.renewed_at = None if seconds_ago is None else time.monotonic() - seconds_ago
    return lock


def test_a_lease_holds_until_the_renew_deadline_after_its_last_renewal():
    assert lock_renewed(1).holds(10)
    assert not lock_renewed(11).holds(10)  # paused past the deadline: another replica may lead
    assert not lock_renewed(None).holds(10)  # never acquired


def test_a_successful_renewal_moves_the_time_and_a_failed_one_does_not():
    lock = lock_renewed(30)
    assert lock._renewed(time.monotonic(), False) is False and not lock.holds(10)
    assert lock._renewed(time.monotonic(), True) is True and lock.holds(10)


def test_a_fenced_write_is_never_sent_and_a_read_is(tmp_path):
    with answering(tmp_path, body=b'{"kind": "DeploymentList", "items": []}') as path:
        kube = Kube(path, retry_seconds=5)
        asked = []
        kube.fence = lambda: asked.append("write") or False
        with pytest.raises(Fenced) as refused:
            kube.apply(DEPLOYMENT)
        assert asked == ["write"]  # asked once: not retried (a retried fault asks again until the 5 s are over)
        assert refused.value.status == 0 and "no write is sent until it renews" in str(refused.value)
        assert kube.list_in("apps", "Deployment", "shop") == []
        kube.fence = lambda: True
        kube.apply(DEPLOYMENT)  # the server answers a PATCH: sent
