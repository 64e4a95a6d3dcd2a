"""A kubeconfig user's ``tokenFile`` read again while the agent runs, as client-go reads it.

Why: a token file is often rotated under a long-running client (a projected service-account
token, which the kubelet renews before it expires; a mounted Secret; a token a sidecar renews).
client-go, so kubectl and every controller built on it, does not read it once: its
``transport.NewCachedFileTokenSource`` (``k8s.io/client-go/transport/token_source.go``) wraps
the file in a ``cachingTokenSource`` that reads it again once the token it holds is a minute old
(less a 10 s leeway), and when that read fails keeps the token it has and logs the error. The
official Python client's kubeconfig loader reads the file once, so ``python -m agent run`` would
send a stale token after the first rotation, for ever.

Here the first read is ``kubecreds.read_token_file`` at load, which refuses a bad file in one
line before anything is sent, as before. After that, ``TokenFile`` is the configuration's
``refresh_api_key_hook``, which the client calls from ``get_api_key_with_prefix`` before each
request (the client's in-cluster loader refreshes its own token file the same way,
``kubernetes/config/incluster_config.py``). It reads the file again at most once every
``PERIOD`` seconds, by the same rule (``values.one_line_token``); a read that fails (the file
missing, unreadable, empty, more than one line) never stops the agent: the previous token is
kept and one warning line names the file and the reason, never the token, and the file is tried
again a period later (client-go tries again at every request, logging each failure).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from agent.kube import kubecreds

PERIOD = 60.0  # seconds between reads: client-go's period for a token file
HEADER = "BearerToken"  # the key of ``Configuration.api_key`` the client sends as Authorization

log = logging.getLogger("agent.tokenfile")
default_clock = time.monotonic  # what periods are measured on, unless a TokenFile is given a clock


class TokenFile:
    """The token of ``owner``'s tokenFile ``value`` (relative to ``base``), first read as
    ``token`` (at the time ``clock()`` gives now), read again when it is ``period`` seconds old.
    Called with a ``kubernetes.client.Configuration``, it sets the configuration's bearer token
    to the newest good one. Shared, not copied, by the copies of the configuration the client
    makes (``Configuration.set_default`` deep-copies), and safe to call from several threads."""

    def __init__(self, owner: str, value, base: str, token: str, *,
                 clock: Callable[[], float] | None = None, period: float = PERIOD):
        self.owner, self.value, self.base = owner, value, base
        self.token = token
        self.clock = clock if clock is not None else default_clock
        self.period = period
        self._read_at = self.clock()
        self._lock = threading.Lock()

    def __call__(self, configuration) -> None:
        if self.clock() - self._read_at >= self.period:
            with self._lock:
                now = self.clock()
                if now - self._read_at >= self.period:  # no other thread read it meanwhile
                    self._read_at = now  # a failed read too: tried again a period later
                    try:
                        self.token = kubecreds.read_token_file(self.owner, self.value, self.base)
                    except kubecreds.ConfigError as err:
                        log.warning("%s; the agent keeps sending the token it read before and tries again in %.0fs",
                                    err, self.period)
        configuration.api_key[HEADER] = f"Bearer {self.token}"

    def __deepcopy__(self, memo) -> TokenFile:
        return self

    def __copy__(self) -> TokenFile:
        return self


def install(configuration, chosen: kubecreds.Chosen) -> None:
    """Make ``configuration``, loaded for ``chosen``, read the user's tokenFile again while it is
    used, when the token it sends came from that file: a user with a tokenFile and neither a
    token nor an auth-provider (which the loader prefers to it)."""
    user = chosen.user or {}
    if "tokenFile" not in user or "token" in user or "auth-provider" in user:
        return
    header = (configuration.api_key or {}).get(HEADER) or ""
    if not header.startswith("Bearer "):
        return
    configuration.refresh_api_key_hook = TokenFile(f"user {chosen.user_name!r}", user["tokenFile"], chosen.user_base,
                                                   header.removeprefix("Bearer "))
