"""How the Kube client words a server it cannot reach (a real socket: port 1 on loopback refuses)."""

from __future__ import annotations

import pytest
import urllib3

from agent.kube.client import ApiError, Kube, _unreachable
from tests.unit.kube.test_kube_limits import KUBECONFIG  # port 1 on loopback: refused


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


def test_a_proxy_that_refuses_is_named_not_only_the_server(tmp_path):
    """A refusal by the proxy (``proxy-url`` here; ``HTTPS_PROXY`` alike) reads as the proxy's,
    its password hidden: the server behind it was never asked."""
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.replace('server: "https://127.0.0.1:1"',
                                       'server: "https://127.0.0.1:1", proxy-url: "http://bob:s3cret@127.0.0.1:9"'))
    kube = Kube(str(path), retry_seconds=0)
    assert kube.api.configuration.proxy == "http://bob:s3cret@127.0.0.1:9"
    with pytest.raises(ApiError) as caught:
        kube.request("GET", "/api/v1/namespaces")
    assert "cannot connect to https://127.0.0.1:1 through the proxy http://bob:***@127.0.0.1:9: Connection refused" \
        in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_a_proxy_fault_without_an_operating_system_reason_keeps_urllib3s_words():
    inner = urllib3.exceptions.ReadTimeoutError(None, "/api", "Read timed out. (read timeout=5)")
    err = urllib3.exceptions.MaxRetryError(None, "/api", urllib3.exceptions.ProxyError("Unable to connect to proxy", inner))
    assert _unreachable("https://h:6443", err, "https://p:3128") == (
        "cannot connect to https://h:6443 through the proxy https://p:3128: None: Read timed out. (read timeout=5)")
    assert _unreachable("https://h:6443", err) == " ".join(str(err).split())  # no proxy configured: as before
