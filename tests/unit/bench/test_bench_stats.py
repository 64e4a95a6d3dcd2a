"""bench.stats: the benchmark's medians, run order, scaling fit and request bookkeeping."""

import math

import pytest

from bench import stats


@pytest.mark.parametrize("values, expected", [
    ([5.0], 5.0),
    ([3.0, 1.0], 2.0),
    ([9.0, 1.0, 4.0], 4.0),
    ([4.0, 1.0, 3.0, 10.0], 3.5),
    ([2.0, 2.0, 7.0], 2.0),
])
def test_median(values, expected):
    assert stats.median(values) == expected


def test_median_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        stats.median([])


@pytest.mark.parametrize("ns, times, expected", [
    ([100, 1000], [1.0, 10.0], 1.0),            # linear
    ([100, 1000, 10000], [1.0, 100.0, 10000.0], 2.0),  # quadratic
    ([10, 100], [5.0, 5.0], 0.0),               # constant
    ([1000, 10000], [10.0, 112.2], math.log10(11.22)),
])
def test_fit_exponent(ns, times, expected):
    assert stats.fit_exponent(ns, times) == pytest.approx(expected, abs=1e-9)


def test_fit_exponent_is_least_squares_over_three_points():
    # log10 points (2, 0), (3, 1), (4, 1.5): slope = sum(dx*dy)/sum(dx^2) = (-1*-0.8333 + 1*0.6667)/2
    ns, times = [100, 1000, 10000], [1.0, 10.0, 10 ** 1.5]
    assert stats.fit_exponent(ns, times) == pytest.approx(0.75)


@pytest.mark.parametrize("ns, times", [
    ([100], [1.0]),
    ([100, 100], [1.0, 2.0]),
    ([100, 1000], [1.0, 0.0]),
    ([0, 1000], [1.0, 2.0]),
    ([100, 1000], [1.0]),
])
def test_fit_exponent_refuses_what_cannot_be_fitted(ns, times):
    with pytest.raises(ValueError):
        stats.fit_exponent(ns, times)


def test_interleave_runs_every_variant_once_per_round():
    assert stats.interleave(["A", "B", "C"], 2) == [(0, "A"), (0, "B"), (0, "C"), (1, "A"), (1, "B"), (1, "C")]
    assert stats.interleave(["A"], 1) == [(0, "A")]
    with pytest.raises(ValueError):
        stats.interleave(["A"], 0)


@pytest.mark.parametrize("n, rounds", [(1, 3), (100, 3), (101, 2), (1000, 2), (1001, 1), (10000, 1)])
def test_default_repeats(n, rounds):
    assert stats.default_repeats(n) == rounds


def test_samples_keep_values_per_size_variant_and_figure():
    s = stats.Samples()
    for value in (3.0, 1.0, 2.0):
        s.add(100, "agent:this", "cold_s", value)
    s.add(1000, "agent:this", "cold_s", 9.0)
    assert s.values(100, "agent:this", "cold_s") == [3.0, 1.0, 2.0]
    assert s.median(100, "agent:this", "cold_s") == 2.0
    assert s.median(1000, "agent:this", "cold_s") == 9.0
    assert s.median(100, "kubectl", "cold_s") is None
    assert s.values(100, "kubectl", "cold_s") == []
    assert s.as_rows()[0] == {"n": 100, "variant": "agent:this", "figure": "cold_s",
                              "values": [3.0, 1.0, 2.0], "median": 2.0}


METRICS = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 10
apiserver_request_total{code="201",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="All",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="services",scope="cluster",subresource="",verb="LIST",version="v1"} 2
apiserver_request_total_other{verb="LIST"} 99
apiserver_request_duration_seconds_count{verb="LIST"} 4
"""


def test_parse_request_total_sums_codes_and_skips_dry_runs_and_other_metrics():
    assert stats.parse_request_total(METRICS) == {
        ("APPLY", "apps", "deployments", ""): 15.0,
        ("LIST", "", "services", ""): 2.0,
    }


def test_delta_keeps_what_grew_and_counts_new_keys_from_zero():
    before = {("LIST", "", "services", ""): 2.0, ("GET", "", "nodes", ""): 5.0}
    after = {("LIST", "", "services", ""): 3.0, ("GET", "", "nodes", ""): 5.0, ("POST", "", "events", ""): 4.0}
    assert stats.delta(before, after) == {("LIST", "", "services", ""): 1.0, ("POST", "", "events", ""): 4.0}


def test_delta_of_a_counter_that_went_down_is_an_error():
    with pytest.raises(ValueError, match="restarted"):
        stats.delta({("LIST", "", "services", ""): 5.0}, {("LIST", "", "services", ""): 1.0})


def test_client_requests_leave_out_controllers_and_other_resources():
    grown = {
        ("APPLY", "heumsi.github.io", "applications", ""): 10.0,
        ("PATCH", "heumsi.github.io", "applications", "status"): 10.0,
        ("APPLY", "apps", "deployments", ""): 10.0,
        ("UPDATE", "apps", "deployments", "status"): 10.0,  # deployment controller
        ("PATCH", "apps", "deployments", "status"): 3.0,    # no client writes Deployment status
        ("UPDATE", "apps", "deployments", ""): 2.0,         # the controller's PUT
        ("POST", "apps", "replicasets", ""): 10.0,          # not a client resource
        ("WATCH", "", "services", ""): 1.0,
        ("POST", "", "events", ""): 30.0,
        ("LIST", "", "namespaces", ""): 1.0,
        ("GET", "coordination.k8s.io", "leases", ""): 8.0,
    }
    assert stats.client_requests(grown) == {
        ("APPLY", "applications", ""): 10,
        ("PATCH", "applications", "status"): 10,
        ("APPLY", "deployments", ""): 10,
        ("POST", "events", ""): 30,
        ("LIST", "namespaces", ""): 1,
    }


def test_totals_split_writes_reads_and_events():
    requests = {("APPLY", "applications", ""): 10, ("POST", "events", ""): 30, ("LIST", "namespaces", ""): 1,
                ("GET", "applications", ""): 2, ("DELETE", "services", ""): 1, ("PATCH", "events", ""): 1}
    assert stats.totals(requests) == {"requests": 45, "writes": 42, "reads": 3, "events": 31}
    assert stats.totals({}) == {"requests": 0, "writes": 0, "reads": 0, "events": 0}


def test_describe_lists_largest_first_with_subresources():
    requests = {("LIST", "services", ""): 1, ("PATCH", "applications", "status"): 10, ("APPLY", "services", ""): 10}
    assert stats.describe(requests) == "APPLY services 10, PATCH applications/status 10, LIST services 1"
    assert stats.describe({}) == ""


@pytest.mark.parametrize("a, b, expected", [(1.0, 4.0, 0.25), (None, 4.0, None), (1.0, None, None), (1.0, 0, None)])
def test_ratio(a, b, expected):
    assert stats.ratio(a, b) == expected


@pytest.mark.parametrize("repeats, sizes, n, expected", [
    ([], [100, 1000], 100, 3),        # the default per size
    ([], [100, 1000], 1000, 2),
    ([1], [100, 1000], 100, 1),       # one number for every size
    ([3, 1], [100, 1000], 100, 3),    # one per size
    ([3, 1], [100, 1000], 1000, 1),
])
def test_rounds_per_size(repeats, sizes, n, expected):
    from bench.__main__ import rounds

    assert rounds(repeats, sizes, n) == expected


def test_stop_at_is_the_next_time_the_clock_shows_it():
    import datetime

    from bench.__main__ import _stop_at

    now = datetime.datetime.now(datetime.timezone.utc)
    for minutes in (-60, 60):
        clock = (now + datetime.timedelta(minutes=minutes)).strftime("%H:%M")
        at = _stop_at(clock)
        assert now < at <= now + datetime.timedelta(days=1)
        assert at.strftime("%H:%M") == clock


def test_the_passs_own_requests_are_its_reads_namespaces_and_the_controllers_events():
    requests = {("APPLY", "applications", ""): 1000, ("APPLY", "deployments", ""): 1000,
                ("APPLY", "services", ""): 1000, ("PATCH", "applications", "status"): 1000,
                ("POST", "events", ""): 1006, ("LIST", "deployments", ""): 11, ("LIST", "services", ""): 11,
                ("LIST", "applications", ""): 1, ("LIST", "namespaces", ""): 1, ("POST", "namespaces", ""): 10}
    assert stats.per_pass(requests, own_events=1000) == 24 + 10 + 6
    assert stats.per_pass(requests, own_events=2000) == 34  # the controllers never count below none


def test_memory_per_application_is_the_line_through_the_smallest_and_largest_n():
    from bench import report

    assert report.sizing([(1000, 110.0)]) is None
    slope, start = report.sizing([(10000, 146.0), (1000, 110.0), (3000, 999.0)])
    assert abs(slope - 0.004) < 1e-9 and abs(start - 106.0) < 1e-9
