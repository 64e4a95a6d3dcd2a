"""The token bucket behind --kube-api-qps / --kube-api-burst (client-go's model)."""

from __future__ import annotations

import threading
import time

import pytest

from agent.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS, TokenBucket


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_defaults_are_fluxs():
    assert (DEFAULT_QPS, DEFAULT_BURST) == (50.0, 300)


def test_a_full_bucket_serves_burst_requests_at_once_then_one_per_interval():
    clock = Clock()
    bucket = TokenBucket(qps=5, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.2)
    assert bucket.reserve() == pytest.approx(0.4)  # reservations queue up: first come, first served


def test_tokens_refill_at_qps_and_never_above_burst():
    clock = Clock()
    bucket = TokenBucket(qps=2, burst=2, clock=clock)
    bucket.reserve(), bucket.reserve()
    clock.now += 0.5  # one token back
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == pytest.approx(0.5)
    clock.now += 1000  # a long quiet spell refills to burst, not beyond
    assert [bucket.reserve() for _ in range(2)] == [0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.5)


def test_exactly_one_token_left_needs_no_wait():
    bucket = TokenBucket(qps=1, burst=1, clock=Clock())
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == pytest.approx(1.0)


@pytest.mark.parametrize("qps, burst", [(0, 1), (-1, 1), (1, 0), (float("nan"), 1)])
def test_bad_settings_are_refused(qps, burst):
    with pytest.raises(ValueError):
        TokenBucket(qps, burst)


def test_wait_blocks_for_the_reserved_delay_and_returns_it():
    bucket = TokenBucket(qps=10, burst=1)
    assert bucket.wait() == 0.0
    started = time.monotonic()
    waited = bucket.wait(threading.Event())
    assert 0.08 <= waited and time.monotonic() - started >= 0.08  # lower bounds: load only adds to them


def test_wait_ends_at_once_on_interrupt():
    bucket = TokenBucket(qps=0.01, burst=1)  # the second token is 100 s away
    bucket.wait()
    interrupt = threading.Event()
    threading.Timer(0.1, interrupt.set).start()
    started = time.monotonic()
    bucket.wait(interrupt)
    assert time.monotonic() - started < 50  # not the token's 100 s; no load delays a 0.1 s timer by 50 s


def test_a_lifted_bucket_never_waits_again():
    bucket = TokenBucket(qps=1, burst=1, clock=Clock())
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == pytest.approx(1.0)  # in debt
    bucket.lift()
    assert bucket.lifted
    assert [bucket.reserve() for _ in range(1000)] == [0.0] * 1000
    assert bucket.wait() == 0.0
