"""Client-side rate limit of the agent's API requests: a token bucket, as client-go's.

Why: the API server is shared by every team of a cluster, and a pass over thousands of
Applications with parallel writes could otherwise send hundreds of requests a second. Flux's
controllers limit themselves with client-go's ``flowcontrol.NewTokenBucketRateLimiter(qps,
burst)`` (``--kube-api-qps`` 50, ``--kube-api-burst`` 300 by default); this is the same model:
a bucket holds at most ``burst`` tokens, refills at ``qps`` tokens per second, starts full, and
every request takes one token, waiting for it when the bucket is empty.

Off when the API server has API Priority and Fairness, unless the user set a limit: SIG API
Machinery recommends relying on the server's priority and fairness (Kubernetes 1.20 and later)
instead of a client-side limit, controller-runtime has set none by default since 2025, and
Flux's ``runtime/client`` drops its 50/300 when the server answers with flow-control headers.
``Kube`` starts with Flux's bucket and ``lift``s it at the first answer that carries them
(``FLOW_CONTROL_HEADER``); an explicit ``--kube-api-qps`` or ``--kube-api-burst`` always holds.

Why not a library: ``pyrate-limiter`` (the well-kept one on PyPI) counts a sliding window of
``Rate(limit, interval)`` rather than a refilling bucket, and its blocking acquire sleeps with
``time.sleep``, which nothing can cut short. The agent must end every wait at once on SIGTERM
(``Kube.interrupt``); a ``threading.Event.wait`` with a timeout does that. ``limits`` only
answers "allowed now or not" and leaves waiting to the caller. The class below is the whole
algorithm (a reservation per caller under one lock), small enough to table-test exactly.
"""

from __future__ import annotations

import threading
import time

DEFAULT_QPS = 50.0
DEFAULT_BURST = 300
# Set by the API server's priority-and-fairness filter on every answer it classifies
# (k8s.io/apiserver, ``flowcontrol.ResponseHeaderMatchedFlowSchemaUID``).
FLOW_CONTROL_HEADER = "X-Kubernetes-PF-FlowSchema-UID"


class TokenBucket:
    """``qps``: tokens added per second (> 0); ``burst``: the bucket's size (>= 1), also the
    number of requests that may go at once after a quiet spell. ``clock``: seconds, monotonic
    (tests pass a fake one). Thread-safe: callers are served first come, first served, because
    each reserves its token (the bucket may go negative) before it waits."""

    def __init__(self, qps: float, burst: int, clock=time.monotonic):
        if not qps > 0 or burst < 1:
            raise ValueError(f"qps must be > 0 and burst >= 1 (got qps={qps}, burst={burst})")
        self.qps, self.burst = float(qps), int(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._stamp = clock()
        self._lock = threading.Lock()
        self.lifted = False  # ``lift``: every token is there at once from then on

    def lift(self) -> None:
        """Turn the limit off for good: ``reserve`` answers 0.0 from now on."""
        self.lifted = True

    def reserve(self) -> float:
        """Take one token now; returns the seconds the caller must wait before its request
        (0.0 when a token was there). The token stays taken even if the caller then gives up
        waiting, as client-go's reservation does."""
        if self.lifted:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def wait(self, interrupt: threading.Event | None = None) -> float:
        """Block until this caller's token is due; returns the seconds waited. Ends at once when
        ``interrupt`` is set (then the request goes ahead unthrottled: on shutdown, finishing the
        pass quickly matters more than its pace)."""
        delay = self.reserve()
        if delay <= 0:
            return 0.0
        started = self._clock()
        if interrupt is not None:
            interrupt.wait(delay)
        else:
            time.sleep(delay)
        return max(0.0, self._clock() - started)
