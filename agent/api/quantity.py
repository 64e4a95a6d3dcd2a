"""Kubernetes quantities (``500m``, ``1.5``, ``128Mi``, ``1e3``): parsed, and written back the way the
API server stores a container's resources (``k8s.io/apimachinery/pkg/api/resource/quantity.go``
and ``SetDefaults_ResourceList`` in ``k8s.io/kubernetes/pkg/apis/core/v1/defaults.go``). Pure.

Why: the API server does not store a quantity as written: ``0.5`` comes back as ``500m``,
``1024Mi`` as ``1Gi``, ``1000m`` as ``1``, ``0.0001`` as ``1m``. A Deployment rendered with the
user's spelling would never equal the live one and every pass would apply it again; rendered as
stored (``stored``), the pass after a sync is quiet.

The grammar (``quantity.go``'s comment; ``schema.QUANTITY_PATTERN`` is the same as a regular
expression)::

    <quantity>        ::= <signedNumber><suffix>
    <signedNumber>    ::= <number> | <sign><number>      <sign> ::= "+" | "-"
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei                   (powers of 1024)
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E      (powers of 1000)
    <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>      (a whole exponent)

How a resource quantity is stored, as ``ParseQuantity`` then ``RoundUp(-3)`` do: the text is
kept as written when ``ParseQuantity``'s fast path finds it "in canonical form" (a decimal one
whose digits, decimal point removed, neither start with 0 nor end in 000 and whose scale is a
multiple of 3; a binary one whose digits are not a multiple of 8) and it has no finer unit than
milli; otherwise the value, rounded up to the next milli, is written canonically
(``CanonicalizeBytes``): a decimal one as a whole mantissa and a power of 1000 without trailing
zeros, a binary one as a power of 1024 when it is a whole number of at least 1024, else decimal.
"""

from __future__ import annotations

import re
from fractions import Fraction

_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_QUANTITY = re.compile(rf"({_NUMBER})(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE]{_NUMBER})?")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {power: suffix for suffix, power in _DECIMAL.items()}
_BINARY_SUFFIX = {0: "", **{power: suffix for suffix, power in _BINARY.items()}}
MAX = 2 ** 63 - 1
"""The largest quantity the agent accepts: Kubernetes counts resources as 64-bit integers (bytes,
millicores), so a larger one means nothing to a scheduler (and the API server writes some of them
back wrongly)."""


class Invalid(ValueError):
    """Not a quantity; the message says why, in words."""


def parse(text) -> tuple[Fraction, str]:
    """The value of a quantity (a string, or an int as YAML reads ``cpu: 2``), rounded away from
    zero to the next nano, and the format of its suffix: ``"DecimalSI"``, ``"BinarySI"`` or
    ``"DecimalExponent"``. Raises ``Invalid``."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise Invalid("must be a quantity such as 500m, 1.5, 128Mi or 1Gi")
    match = _QUANTITY.fullmatch(str(text))
    if match is None:
        raise Invalid("must be a quantity such as 500m, 1.5, 128Mi or 1Gi: a number, then one of the suffixes "
                      "n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent e3")
    number, suffix = match.group(1), match.group(2) or ""
    value = Fraction(number)
    if suffix in _BINARY:
        value, form = value * 1024 ** _BINARY[suffix], "BinarySI"
    elif suffix in _DECIMAL:
        value, form = value * Fraction(10) ** _DECIMAL[suffix], "DecimalSI"
    else:
        exponent = suffix[1:]
        if not re.fullmatch(r"[+-]?[0-9]+", exponent) or not -2 ** 31 <= int(exponent) < 2 ** 31:
            raise Invalid(f"the exponent {suffix!r} must be a whole number (a 32-bit integer)")
        value, form = _scaled(value, number, int(exponent)), "DecimalExponent"
    if value > MAX:
        raise Invalid(f"must be at most {MAX}")
    nanos = value * 10 ** 9
    if nanos.denominator != 1:  # rounded away from zero to the next nano, as ParseQuantity does
        whole = -(-abs(nanos.numerator) // nanos.denominator)
        value = Fraction(whole if value > 0 else -whole, 10 ** 9)
    return value, form


def _scaled(value: Fraction, number: str, exponent: int) -> Fraction:
    """``value`` (of the digits ``number``) times ``10 ** exponent``, without computing a power
    that could not matter: a value at least 10^20 is too large whatever it is (``MAX`` is about
    9.2 * 10^18), and one below 10^-10 is rounded up to the nano anyway."""
    if not value:
        return value
    whole, _, fraction = number.lstrip("+-").partition(".")
    if exponent - len(fraction) >= 20:  # at least 10^(exponent - len(fraction)) >= 10^20
        return Fraction(MAX + 1)
    if exponent + len(whole) < -10:  # below 10^(len(whole) + exponent) <= 10^-11
        return Fraction(value.numerator // abs(value.numerator), 10 ** 10)
    return value * Fraction(10) ** exponent


def _canonical(value: Fraction, form: str) -> str:
    """``value`` (whole nanos) in ``form`` written as ``CanonicalizeBytes`` writes it: a binary
    one of at least 1024 that is whole as a power of 1024, any other as a power of 1000 (an
    exponent for ``DecimalExponent``), the mantissa without trailing zeros."""
    if value == 0:
        return "0"
    sign, value = ("-", -value) if value < 0 else ("", value)
    if form == "BinarySI" and value >= 1024 and value.denominator == 1:
        amount, power = value.numerator, 0
        while amount % 1024 == 0:
            amount, power = amount // 1024, power + 1
        return f"{sign}{amount}{_BINARY_SUFFIX[power]}"
    amount, exponent = (value * 10 ** 9).numerator, -9
    while amount % 10 == 0:
        amount, exponent = amount // 10, exponent + 1
    while exponent % 3:
        amount, exponent = amount * 10, exponent - 1
    if form == "DecimalExponent":
        return f"{sign}{amount}{'e' + str(exponent) if exponent else ''}"
    return f"{sign}{amount}{_DECIMAL_SUFFIX[exponent]}"


_PARTS = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)")


def stored(text) -> str:
    """``text`` (a valid quantity) as the API server stores it in a container's ``resources``
    (see the module docstring), e.g. ``"0.5"`` -> ``"500m"``, ``"1024Mi"`` -> ``"1Gi"``,
    ``"123Mi"`` -> ``"123Mi"``, ``2`` -> ``"2"``, ``"0.0001"`` -> ``"1m"``. Raises ``Invalid``."""
    value, form = parse(text)
    text = str(text)
    if _kept(text):
        return text
    thousandths = value * 1000
    if thousandths.denominator != 1:  # RoundUp(-3): away from zero
        whole = -(-abs(thousandths.numerator) // thousandths.denominator)
        value = Fraction(whole if value > 0 else -whole, 1000)
    return _canonical(value, form)


def _kept(text: str) -> bool:
    """True when ``ParseQuantity``'s fast path keeps ``text`` as written and ``RoundUp(-3)``
    does not change it (the module docstring)."""
    sign, num, denom, suffix = _PARTS.fullmatch(text).groups()
    num, denom = num.lstrip("0"), denom or ""  # parseQuantityString skips leading zeros
    if suffix in _BINARY:
        exponent = 10 * _BINARY[suffix]
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        if denom or precision < 0:
            return False
        return num != "" and int(num) % 8 != 0 and int(num) << exponent <= MAX
    scale = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
    if 18 - len(num) - len(denom) < 0:
        return False
    scale -= len(denom)
    shifted = num + denom
    return -3 <= scale and scale % 3 == 0 and not shifted.endswith("000") and shifted[:1] not in ("", "0")
