"""``validate --default-security-profile``: what the pass refuses of a spec only because the
agent's default profile applies to it is refused offline too, at the field's line."""

from __future__ import annotations

from agent.cli import validate

APP = b"""apiVersion: heumsi.github.io/v1
kind: Application
metadata:
  name: a
spec:
  image: nginx:1
  security:
%s
"""


def _check(security: bytes, profile: str) -> list[tuple]:
    result = validate.check({"apps/a.yaml": APP % security}, "default", default_profile=profile)
    return [(e.path, e.line, e.field, e.message.split(" (")[0]) for e in result.errors]


def test_run_as_root_is_refused_under_the_default_restricted_profile_at_its_line():
    assert _check(b"    runAsUser: 0", "restricted") == [
        ("apps/a.yaml", 8, "spec.security.runAsUser", "must not be 0 with profile restricted")]


def test_the_default_none_and_a_profile_given_keep_the_spec_as_it_is():
    assert _check(b"    runAsUser: 0", "none") == []
    assert _check(b"    profile: none\n    runAsUser: 0", "restricted") == []


def test_a_problem_without_the_default_is_said_once():
    assert _check(b"    profile: restricted\n    runAsUser: 0", "restricted") == [
        ("apps/a.yaml", 9, "spec.security.runAsUser", "must not be 0 with profile restricted")]
