"""Label selectors, as kubectl's ``-l/--selector`` takes them: parsed and matched here. Pure.

Why: ``sync --once --wait -l team=a`` chooses which Applications of the pass it waits for
(issue 46, item 3). The pass has them in hand, so the selector is matched here, not by the API
server; ``reconcile -l`` sends the same text to the API server, so both must read it the same
way, and a selector the server would refuse is refused here first, as one line.

The syntax (Kubernetes ``k8s.io/apimachinery/pkg/labels.Parse``): requirements separated by
commas, all of which must hold:

- ``key=value``, ``key==value``: the label is there with that value;
- ``key!=value``: the label is not there, or has another value;
- ``key in (v1,v2)``: the label is there with one of the values;
- ``key notin (v1,v2)``: the label is not there, or has none of the values;
- ``key``: the label is there (any value); ``!key``: it is not.

A key is a label key (an optional DNS subdomain prefix and ``/``, then a name of at most 63
characters: alphanumerics, ``-``, ``_``, ``.``, alphanumeric at both ends); a value is empty or
such a name. An empty selector matches everything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"^(?:[a-z0-9](?:[-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}$")
_VALUE = re.compile(rf"^(?:{_NAME})?$")
_EXISTS = re.compile(r"^(!?)\s*([^\s!=(),]+)$")
_EQUALS = re.compile(r"^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$")
_SET = re.compile(r"^([^\s!=(),]+)\s+(in|notin)\s*\(([^()]*)\)$")


@dataclass(frozen=True)
class Requirement:
    """One requirement: ``key``, ``op`` (``in``, ``notin``, ``exists``, ``!exists``; ``=`` and
    ``==`` are ``in`` of one value, ``!=`` is ``notin`` of one) and ``values``."""

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def holds(self, labels: dict[str, str]) -> bool:
        """True when ``labels`` meet this requirement."""
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        present = self.key in labels and labels[self.key] in self.values
        return present if self.op == "in" else not present


def parse(text: str) -> tuple[Requirement, ...]:
    """The requirements of the selector ``text`` (the module docstring's syntax). Raises
    ``ValueError`` with one line naming the part that is wrong and the rule."""
    out = []
    for term in _terms(text):
        out.append(_requirement(term))
    return tuple(out)


def matches(requirements: tuple[Requirement, ...], labels: dict[str, str] | None) -> bool:
    """True when ``labels`` (None: no labels) meet every requirement (no requirement: True)."""
    have = labels or {}
    return all(r.holds(have) for r in requirements)


def _terms(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, each part stripped; ``[]`` for a
    blank selector. Raises ``ValueError`` for an empty part or unbalanced parentheses."""
    if not text.strip():
        return []
    terms, depth, start = [], 0, 0
    for at, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if depth not in (0, 1):
            raise ValueError(f"{text!r}: unbalanced parentheses")
        if char == "," and depth == 0:
            terms.append(text[start:at].strip())
            start = at + 1
    if depth:
        raise ValueError(f"{text!r}: unbalanced parentheses")
    terms.append(text[start:].strip())
    if "" in terms:
        raise ValueError(f"{text!r}: an empty requirement (two commas, or one at an end)")
    return terms


def _requirement(term: str) -> Requirement:
    """One requirement of ``term``. Raises ``ValueError``."""
    if found := _SET.match(term):
        key, op, inside = found.groups()
        if not inside.strip():
            raise ValueError(f"{term!r}: {op} needs at least one value in its parentheses")
        values = [v.strip() for v in inside.split(",")]
        return Requirement(_key(key, term), op, frozenset(_value(v, term) for v in values))
    if found := _EQUALS.match(term):
        key, op, value = found.groups()
        return Requirement(_key(key, term), "notin" if op == "!=" else "in", frozenset({_value(value, term)}))
    if found := _EXISTS.match(term):
        bang, key = found.groups()
        return Requirement(_key(key, term), "!exists" if bang else "exists")
    raise ValueError(f"{term!r}: not a requirement: must be key=value, key==value, key!=value, "
                     "key in (v1,v2), key notin (v1,v2), key or !key")


def _key(key: str, term: str) -> str:
    if not _KEY.match(key) or len(key) > 317:
        raise ValueError(f"{term!r}: {key!r} is not a label key: must be a name of at most 63 characters "
                         "(alphanumerics, '-', '_', '.'; alphanumeric at both ends), with an optional DNS prefix "
                         "and '/'")
    return key


def _value(value: str, term: str) -> str:
    if not _VALUE.match(value):
        raise ValueError(f"{term!r}: {value!r} is not a label value: must be empty or at most 63 characters "
                         "(alphanumerics, '-', '_', '.'; alphanumeric at both ends)")
    return value
