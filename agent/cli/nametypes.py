"""Argparse types for the names and addresses flags take: a namespace (DNS-1123 label), an
object name (DNS-1123 subdomain), a label value, a label selector (``-l``), an Application named
as ``NAME`` or ``NAMESPACE/NAME``, ``--allowed-namespaces``' globs and ``--http-addr``'s HOST:PORT.

Why a module of its own: these are Kubernetes' and the network's syntax rules, each refused in
one line naming the value and the rule (``flags.not_allowed``), while ``agent/cli/flags.py`` holds
what every flag shares (variables, one-line errors, numbers, files, tokens). Imports only
``flags`` and the pure ``agent.api.selectors``; nothing here imports the cluster client (``validate`` parses its flags too).
"""

from __future__ import annotations

import ipaddress
import re
import socket

from agent.api import selectors
from agent.cli.flags import not_allowed

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


def label_selector(text: str) -> str:
    """Type for ``-l/--selector``: a label selector as kubectl takes it (``agent.api.selectors``),
    returned as given; refused in one line naming the wrong part and the rule."""
    try:
        selectors.parse(text)
    except ValueError as err:
        raise not_allowed(text, f"a label selector as kubectl takes it: {err}") from None
    return text


def application(text: str) -> str:
    """Type for an Application named as ``NAME`` (any namespace the command's ``-n`` allows) or
    ``NAMESPACE/NAME``: a DNS-1123 subdomain, after a DNS-1123 label and ``/``."""
    namespace, slash, name = text.rpartition("/")
    if slash and not (len(namespace) <= 63 and _DNS_LABEL.fullmatch(namespace)):
        raise not_allowed(text, "NAME or NAMESPACE/NAME (a namespace is a DNS-1123 label)")
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        raise not_allowed(text, "NAME or NAMESPACE/NAME (a name is a DNS-1123 subdomain: lowercase letters, "
                                "digits, '-' and '.', at most 253 characters)")
    return text


def dns_label(text: str) -> str:
    """Type for a namespace: a DNS-1123 label (lowercase letters, digits, '-', 1-63 chars)."""
    if len(text) > 63 or not _DNS_LABEL.fullmatch(text):
        raise not_allowed(text, "a DNS-1123 label (lowercase letters, digits and '-', starting and "
                            "ending with a letter or digit, at most 63 characters)")
    return text


def dns_subdomain(text: str) -> str:
    """Type for an object name such as a Lease's: a DNS-1123 subdomain (at most 253 chars)."""
    if len(text) > 253 or not _DNS_SUBDOMAIN.fullmatch(text):
        raise not_allowed(text, "a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', "
                            "at most 253 characters)")
    return text


def label_value(text: str) -> str:
    """Type for a Kubernetes label value (at most 63 characters: letters, digits, '-', '_',
    '.', starting and ending with a letter or digit), non-empty."""
    if not text or len(text) > 63 or not _LABEL_VALUE.fullmatch(text):
        raise not_allowed(text, "a label value (1-63 letters, digits, '-', '_' or '.', starting "
                            "and ending with a letter or digit)")
    return text


_HTTP_ADDR_RULE = ("HOST:PORT with HOST empty (every interface), an IPv4 address or a host name, and a port "
                   "from 0 to 65535 (e.g. :8080 or 127.0.0.1:8080)")
_HOST_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*\.?")


def http_addr(text: str) -> str:
    """Type for ``--http-addr``: ``HOST:PORT``, HOST empty (``:8080`` listens on every interface),
    an IPv4 address or a host name (RFC 1123, at most 253 characters) that resolves to an IPv4
    address, the port 0-65535. Returns ``text``; raises ``argparse.ArgumentTypeError`` naming the
    value, the rule and what is wrong with it (no port, a port out of range, a bad host, a name
    that does not resolve), so a bad address ends the command before anything is loaded."""
    host, sep, port = text.rpartition(":")
    problem = _http_addr_problem(text, host, sep, port)
    if problem:
        raise not_allowed(text, f"{_HTTP_ADDR_RULE}; {problem}")
    if host and not re.fullmatch(r"[0-9.]+", host):  # a name: the server binds what it resolves to
        try:
            socket.getaddrinfo(host, int(port), socket.AF_INET, socket.SOCK_STREAM)
        except (OSError, UnicodeError) as err:
            why = getattr(err, "strerror", None) or err
            raise not_allowed(text, f"{_HTTP_ADDR_RULE}; {host!r} does not resolve to an IPv4 address ({why})") from None
    return text


def _http_addr_problem(text: str, host: str, sep: str, port: str) -> str | None:
    """What is wrong with ``text`` split as ``host``, ``sep`` (':' or nothing), ``port``, in
    words; None when nothing is."""
    if not text.strip():
        return "it is empty"
    if not sep:
        hint = f" (did you mean ':{text}'?)" if text.isdigit() else ""
        return f"there is no port: the ':' before it is missing{hint}"
    if not port:
        return "there is no port after the ':'"
    if not re.fullmatch(r"[0-9]+", port):
        return f"the port {port!r} is not a number"
    if len(port.lstrip("0")) > 5 or int(port) > 65535:
        return f"the port {port} is out of range (0 to 65535)"
    if host.startswith("[") or ":" in host:
        return f"the host {host!r} is an IPv6 address; the server listens on IPv4 only"
    if not host or _http_host(host):
        return None
    if re.fullmatch(r"[0-9.]+", host):
        return f"the host {host!r} is not an IPv4 address (four numbers from 0 to 255, separated by dots)"
    return (f"the host {host!r} is not a host name (letters, digits and '-' in labels of 1 to 63 characters "
            "separated by dots, no label starting or ending with '-', at most 253 characters)")


def _http_host(host: str) -> bool:
    """True for an empty host, an IPv4 address in dotted decimal or a host name's syntax."""
    if not host:
        return True
    if re.fullmatch(r"[0-9.]+", host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return False
        return True
    return len(host) <= 253 and bool(_HOST_NAME.fullmatch(host))


def _patterns(text: str, rule: str, chars: str, longest: int) -> tuple[str, ...]:
    """Comma-separated globs of ``text`` (blanks around commas ignored), each at most ``longest``
    characters of ``chars`` with balanced ``[...]``. Raises ``not_allowed`` naming ``rule``."""
    patterns = tuple(p.strip() for p in text.split(",") if p.strip())
    if not patterns or any(len(p) > longest or not re.fullmatch(f"[{chars}]+", p) or p.count("[") != p.count("]")
                           for p in patterns):
        raise not_allowed(text, rule)
    return patterns


def namespace_patterns(text: str) -> tuple[str, ...]:
    """Type for ``--allowed-namespaces``: comma-separated namespace names or shell-style globs
    (``team-*``, ``app-?``); blanks around commas are ignored. Returns the patterns as a tuple;
    each must be a DNS-1123 label once ``*``, ``?`` and ``[...]`` are taken out."""
    return _patterns(text, "comma-separated namespace names or globs (lowercase letters, digits, '-', and the "
                     "wildcards * ? [...]), at least one", r"a-z0-9*?\[\]!-", 63)


def service_account_patterns(text: str) -> tuple[str, ...]:
    """Type for ``--allowed-service-accounts``: comma-separated ServiceAccount names (DNS-1123
    subdomains) or shell-style globs (``app-*``); blanks around commas are ignored. Returns the
    patterns as a tuple."""
    return _patterns(text, "comma-separated ServiceAccount names or globs (lowercase letters, digits, '-', '.', "
                     "and the wildcards * ? [...]), at least one", r"a-z0-9*?\[\]!.-", 253)
