"""The Kube client keeps the API server's Warning headers of a write (two headers, as the API
server sends two warnings) for ``take_warnings``, per thread; a read's and a refused write's are
not kept. A real local HTTP server (``test_kube_limits.answering``)."""

from __future__ import annotations

import threading

import pytest

from agent.kube.client import ApiError, Kube
from tests.unit.kube.test_kube_limits import answering

TWO = (("Warning", '299 - "would violate PodSecurity \\"restricted:latest\\": runAsNonRoot != true"'),
       ("Warning", '299 - "second"'))
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"}}


def test_the_warnings_of_a_write_are_taken_once_by_its_thread(tmp_path):
    with answering(tmp_path, body=b'{"kind": "Deployment", "metadata": {"name": "web"}}', headers=TWO) as kubeconfig:
        kube = Kube(kubeconfig, retry_seconds=0)
        kube.request("GET", "/api/v1/namespaces")
        assert kube.take_warnings() == []  # a read's are not kept
        kube.apply(DEPLOYMENT)
        elsewhere: list[list[str]] = []
        other = threading.Thread(target=lambda: elsewhere.append(kube.take_warnings()))
        other.start()
        other.join()
        assert elsewhere == [[]]  # another thread's writes are not its own
        assert kube.take_warnings() == ['would violate PodSecurity "restricted:latest": runAsNonRoot != true', "second"]
        assert kube.take_warnings() == []
        kube.apply(DEPLOYMENT)
        kube.apply(DEPLOYMENT)
        assert len(kube.take_warnings()) == 2  # the same texts once


def test_a_refused_write_keeps_no_warning(tmp_path):
    with answering(tmp_path, status=422, body=b'{"kind": "Status", "message": "no"}', headers=TWO) as kubeconfig:
        kube = Kube(kubeconfig, retry_seconds=0)
        with pytest.raises(ApiError):
            kube.apply(DEPLOYMENT)
        assert kube.take_warnings() == []
