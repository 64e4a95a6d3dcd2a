"""``run --stuck-pass-after``: how long a pass may run before ``/healthz`` fails (issue 42). Unset,
``run`` keeps 3 intervals, at least ``endpoints.STUCK_MINIMUM``; the cluster test of a stuck pass is
``tests/test_git_hardening.py::test_a_pass_of_run_stuck_past_its_bound_makes_healthz_fail``."""

from __future__ import annotations

import pytest

from agent.cli import main


def parse(*argv: str):
    return main.build_parser("run").parse_args(["run", "--repo", "https://example.com/apps.git", *argv])


def test_unset_it_leaves_the_bound_to_the_interval():
    assert parse().stuck_pass_after is None


@pytest.mark.parametrize("given, seconds", [("900", 900), ("5m", 300), ("1h30m", 5400)])
def test_seconds_or_a_duration(given, seconds):
    assert parse("--stuck-pass-after", given).stuck_pass_after == seconds


def test_from_its_variable(monkeypatch):
    monkeypatch.setenv("GITOPS_AGENT_STUCK_PASS_AFTER", "20m")
    assert parse().stuck_pass_after == 1200


@pytest.mark.parametrize("given", ["0", "-1", "86401", "soon"])
def test_out_of_range_is_refused_in_one_line_with_exit_2(given, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse("--stuck-pass-after", given)
    assert exit_.value.code == 2
    assert "argument --stuck-pass-after:" in capsys.readouterr().err
