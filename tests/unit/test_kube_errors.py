"""How the Kube client words a server it cannot reach (a real socket: port 1 on loopback refuses)."""

from __future__ import annotations

import pytest
import urllib3

from agent.kube import ApiError, Kube, _unreachable
from tests.unit.test_kube_limits import KUBECONFIG  # port 1 on loopback: refused


def test_a_refused_connection_is_named_in_words_with_the_server(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    kube = Kube(str(path), retry_seconds=0)
    with pytest.raises(ApiError) as caught:
        kube.request("GET", "/api/v1/namespaces")
    err = caught.value
    assert err.status == 0
    assert "cannot connect to https://127.0.0.1:1: Connection refused" in str(err)
    assert "Errno" not in str(err) and "HTTPSConnection" not in str(err)


def test_the_reason_is_found_down_the_chain_of_causes():
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as sock:
            raise urllib3.exceptions.NewConnectionError(None, f"Failed to establish a new connection: {sock}") from sock
    except urllib3.exceptions.HTTPError as err:
        assert _unreachable("https://h:6443", err) == "cannot connect to https://h:6443: Connection refused"


def test_without_an_operating_system_reason_urllib3s_words_are_kept_on_one_line():
    err = urllib3.exceptions.ReadTimeoutError(None, "/api", "Read timed out.\n(read timeout=30)")
    assert _unreachable("https://h:6443", err) == "None: Read timed out. (read timeout=30)"
    assert _unreachable("https://h", OSError("no strerror")) == "no strerror"
