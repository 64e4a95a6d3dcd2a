"""The proxy a request to the API server goes through when the kubeconfig names none, read from
the environment as kubectl reads it (client-go uses Go's ``http.ProxyFromEnvironment``,
``golang.org/x/net/http/httpproxy``), not as Python's ``urllib.request.getproxies`` reads it.

Why a module of its own: the two readings differ where it shows. Go never sends a request to
``localhost`` or a loopback address through an environment proxy (so a local cluster works in a
shell that has ``HTTPS_PROXY`` set for the internet), reads the upper-case variable first, and
does not read ``ALL_PROXY``; Python proxies loopback addresses, lets the lower-case variable win
and falls back to ``ALL_PROXY``. A kubeconfig's ``proxy-url`` is not this module's: kubectl uses
it for every request, whatever ``NO_PROXY`` says. Pure: the environment is an argument.
"""

from __future__ import annotations

import ipaddress
from typing import Mapping
from urllib.parse import urlsplit

DEFAULT_PORTS = {"https": 443, "http": 80}


def chosen(server: str, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """``(proxy URL, the variable it came from)`` for requests to ``server`` (the API server's
    ``https://`` or ``http://`` URL), or ``(None, None)`` when they go direct. ``HTTPS_PROXY``
    (then ``https_proxy``) serves an ``https://`` server, ``HTTP_PROXY`` (then ``http_proxy``)
    an ``http://`` one; an empty variable counts as unset. A value without ``://`` is taken as
    ``http://`` + value, as Go takes it. ``bypassed`` decides ``NO_PROXY``."""
    parts = urlsplit(server)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        return None, None
    upper = f"{scheme.upper()}_PROXY"
    name = _first(environ, upper, upper.lower())
    if name is None:
        return None, None
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:  # refused when the server is checked
        return None, None
    no_proxy = _first(environ, "NO_PROXY", "no_proxy")
    if bypassed(parts.hostname or "", port, environ[no_proxy] if no_proxy else ""):
        return None, None
    value = environ[name]
    return (value if "://" in value else f"http://{value}"), name


def bypassed(host: str, port: int, no_proxy: str) -> bool:
    """True when a request to ``host``:``port`` goes direct: ``host`` is ``localhost`` or a
    loopback address, or matches an entry of ``no_proxy`` (comma-separated, blanks and case
    ignored): ``*`` (everything), an IP address or CIDR (``10.0.0.0/8``), a domain (``example.com``
    matches it and its subdomains, ``.example.com`` and ``*.example.com`` only the subdomains);
    an address or domain may carry ``:port``, and then matches that port only. Go's rules."""
    host = host.lower().strip("[]")
    if not host:
        return False
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if host == "localhost" or (ip is not None and ip.is_loopback):
        return True
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*":
            return True
        if entry and _matches(entry, host, ip, str(port)):
            return True
    return False


def _matches(entry: str, host: str, ip, port: str) -> bool:
    if "/" in entry:  # a CIDR matches addresses only, whatever the port
        try:
            return ip is not None and ip in ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
    name, entry_port = _split_port(entry)
    if not name:
        return False
    try:
        entry_ip = ipaddress.ip_address(name)
    except ValueError:
        entry_ip = None
    if entry_port and entry_port != port:
        return False
    if entry_ip is not None:
        return ip is not None and ip == entry_ip
    name = name[1:] if name.startswith("*.") else name
    if name.startswith("."):
        return host.endswith(name)
    return host == name or host.endswith("." + name)


def _split_port(entry: str) -> tuple[str, str]:
    """(``entry`` without its ``:port``, the port or ""): ``[::1]:80``, ``1.2.3.4:80``,
    ``example.com:80``; a bare IPv6 address has no port."""
    if entry.startswith("["):
        close = entry.find("]")
        if close < 0:
            return "", ""
        rest = entry[close + 1:]
        return entry[1:close], rest[1:] if rest.startswith(":") else ""
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return name, port
    return entry, ""


def _first(environ: Mapping[str, str], *names: str) -> str | None:
    return next((n for n in names if environ.get(n)), None)
