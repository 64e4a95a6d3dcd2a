"""The environment's proxy as kubectl reads it (Go's ``httpproxy`` rules), ``agent/kube/proxyenv.py``."""

from __future__ import annotations

import pytest

from agent.kube.proxyenv import bypassed, chosen

PROXY = "http://proxy.example:3128"


@pytest.mark.parametrize("server, environ, expected", [
    ("https://10.0.0.1:6443", {"HTTPS_PROXY": PROXY}, (PROXY, "HTTPS_PROXY")),
    ("https://10.0.0.1:6443", {"https_proxy": PROXY}, (PROXY, "https_proxy")),
    ("https://10.0.0.1:6443", {"HTTPS_PROXY": PROXY, "https_proxy": "http://other:1"}, (PROXY, "HTTPS_PROXY")),
    ("https://10.0.0.1:6443", {"HTTPS_PROXY": "", "https_proxy": PROXY}, (PROXY, "https_proxy")),
    ("https://10.0.0.1:6443", {"HTTP_PROXY": PROXY}, (None, None)),  # no fallback to the other scheme's
    ("http://10.0.0.1:8080", {"HTTP_PROXY": PROXY, "HTTPS_PROXY": "http://other:1"}, (PROXY, "HTTP_PROXY")),
    ("https://10.0.0.1:6443", {"ALL_PROXY": PROXY, "all_proxy": PROXY}, (None, None)),
    ("https://10.0.0.1:6443", {"HTTPS_PROXY": "proxy.example:3128"}, (PROXY, "HTTPS_PROXY")),
    ("https://127.0.0.1:6443", {"HTTPS_PROXY": PROXY}, (None, None)),
    ("https://localhost:6443", {"HTTPS_PROXY": PROXY}, (None, None)),
    ("https://[::1]:6443", {"HTTPS_PROXY": PROXY}, (None, None)),
    ("https://10.0.0.1:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.0.0.1"}, (None, None)),
    ("https://10.0.0.1:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "", "no_proxy": "10.0.0.1"}, (None, None)),
    ("https://10.0.0.1:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.0.0.2", "no_proxy": "10.0.0.1"}, (PROXY, "HTTPS_PROXY")),
    ("ftp://10.0.0.1", {"HTTPS_PROXY": PROXY}, (None, None)),
    ("https://10.0.0.1:notaport", {"HTTPS_PROXY": PROXY}, (None, None)),
    ("https://api.example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.example.com:443"}, (None, None)),
    ("https://api.example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.example.com:6443"}, (PROXY, "HTTPS_PROXY")),
])
def test_the_proxy_for_a_server(server, environ, expected):
    assert chosen(server, environ) == expected


@pytest.mark.parametrize("host, port, no_proxy, expected", [
    ("localhost", 6443, "", True), ("LOCALHOST", 6443, "", True), ("127.0.0.5", 6443, "", True), ("::1", 443, "", True),
    ("10.0.0.1", 443, "", False), ("", 443, "*", False), ("example.com", 443, "*", True),
    ("example.com", 443, " , ,other.com , EXAMPLE.com ", True),
    ("10.1.2.3", 443, "10.0.0.0/8", True), ("10.1.2.3", 443, "11.0.0.0/8", False),
    ("example.com", 443, "10.0.0.0/8", False), ("10.1.2.3", 443, "10.0.0.0/bad", False),
    ("fd00::5", 443, "fd00::/16", True), ("fd00::5", 443, "fd00::5", True), ("fd00::5", 443, "[fd00::5]:443", True),
    ("fd00::5", 443, "[fd00::5]:80", False), ("fd00::5", 443, "[fd00::5", False),
    ("10.0.0.1", 443, "10.0.0.1:443", True), ("10.0.0.1", 443, "10.0.0.1:80", False),
    ("10.0.0.1", 443, "10.0.0.2", False), ("example.com", 443, "10.0.0.1", False),
    ("example.com", 443, "example.com", True), ("api.example.com", 443, "example.com", True),
    ("badexample.com", 443, "example.com", False), ("example.com", 443, ".example.com", False),
    ("api.example.com", 443, ".example.com", True), ("example.com", 443, "*.example.com", False),
    ("api.example.com", 443, "*.example.com", True), ("api.example.com", 443, "example.com:443", True),
    ("api.example.com", 443, "example.com:80", False), ("example.com", 443, ":443", False),
    ("[fd00::5]", 443, "fd00::5", True),
])
def test_no_proxy_as_go_reads_it(host, port, no_proxy, expected):
    assert bypassed(host, port, no_proxy) is expected
