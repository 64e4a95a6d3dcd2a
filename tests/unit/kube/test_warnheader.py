"""warnheader.parse: the API server's Warning headers (RFC 7234 5.5, as apimachinery's
ParseWarningHeader reads them) as texts, bounded against a hostile server."""

import pytest

from agent.kube import warnheader

PSA = ('would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "web" must set '
       'securityContext.allowPrivilegeEscalation=false)')


def quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.parametrize("header, texts", [
    (None, []),
    ("", []),
    (f"299 - {quoted(PSA)}", [PSA]),
    # two headers as urllib3 joins them, and one header with two warnings
    (f'299 - {quoted(PSA)}, 299 - "apps/v1beta1 Deployment is deprecated"',
     [PSA, "apps/v1beta1 Deployment is deprecated"]),
    # a warn-date, spaces around the comma, an escaped backslash
    ('299 - "a" "Sat, 01 Jan 2000 00:00:00 GMT" ,  299 - "b\\\\c"', ["a", "b\\c"]),
    # another code is not an API server warning (kubectl keeps 299 only); the same text once
    ('199 - "misc", 299 - "x", 299 - "x"', ["x"]),
    # control characters become spaces, runs of spaces one
    ('299 - "esc\x1b[31m  red"', ["esc [31m red"]),
    # a quoted pair is the character itself (RFC 7230 3.2.6): a backslash before n is no newline
    ('299 - "a\\nb"', ["anb"]),
    ('299 - "tab\tand\u202eback"', ["tab and back"]),
    # what does not parse ends the reading; what came before is kept
    ('299 - "ok", garbage', ["ok"]),
    ('299 - "unterminated', []),
    ("299 -", []),
    ('29 - "short code"', []),
    ('abc - "not a code"', []),
    ('299 - unquoted', []),
    ('299 - "x" "no closing date', []),
    ('299 - "x" junk, 299 - "y"', []),
    ('299 - ""', []),
])
def test_parse(header, texts):
    assert warnheader.parse(header) == texts


def test_a_hostile_header_is_bounded():
    many = ", ".join(f'299 - "w{i}"' for i in range(1000))
    assert warnheader.parse(many) == [f"w{i}" for i in range(warnheader.MAX_WARNINGS)]
    [long] = warnheader.parse(f'299 - "{"x" * 10_000}", 299 - "next"')[:1]
    assert len(long) == warnheader.MAX_TEXT and long.endswith("...")
    # read MAX_HEADER characters far: a warning that goes on past it is unterminated, dropped
    assert warnheader.parse(f'299 - "short", 299 - "{"x" * warnheader.MAX_HEADER}"') == ["short"]
