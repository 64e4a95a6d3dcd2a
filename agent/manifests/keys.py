"""Mapping keys as Kubernetes reads them: the JSON string kubectl makes of a YAML key. Pure.

Why: JSON, and so the API server, has only string keys. kubectl (``sigs.k8s.io/yaml``'s
``YAMLToJSON`` over its fork of go-yaml v2) reads a plain key with go-yaml's YAML 1.1 rules and
then turns int, bool and float keys into strings (``1`` -> ``"1"``, ``true`` and ``on`` ->
``"true"``, ``1.0`` -> ``"1"``); a null key, or an integer outside int64, it refuses ("unsupported
map key"). Python's ``1 == True == 1.0`` made two labels ``1`` and ``true`` one duplicate key.

The agent refuses every key that is not a plain string to both readers (``problem``), as it refuses
such label values: readers disagree on them (go-yaml reads ``y``, ``n``, ``08`` and ``1e3`` as a
boolean or a number, PyYAML as strings; YAML 1.2 readers such as Flux's read ``on`` as a string),
so only a quoted key means the same to every tool. Duplicate keys are found by ``json_key``, the
string kubectl would send, so ``1`` and ``"1"``, or ``true`` and ``True``, are one key.

Sources: ``sigs.k8s.io/yaml`` ``convertToJSONableObject`` (keys: string as is, int decimal, bool
``true``/``false``, float64 ``strconv.FormatFloat(f, 'g', -1, 32)`` with ``.inf``/``-.inf``/``.nan``,
anything else an error) and ``sigs.k8s.io/yaml/goyaml.v2`` ``resolve`` (plain scalars).
"""

from __future__ import annotations

import datetime
import math
import re
import struct
from decimal import Decimal, localcontext

_WORDS = {**dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
          **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
          **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
          **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
          **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
          **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf)}
_GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")  # goyaml.v2 yamlStyleFloat
_GO_INT = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")  # ParseInt, base 0
_INT64 = range(-2 ** 63, 2 ** 63)


def go_yaml_plain(text: str):
    """What go-yaml v2 (``resolve`` in ``sigs.k8s.io/yaml/goyaml.v2``) makes of the plain, untagged
    scalar ``text``: True/False, None, an int, a float, or ``text`` itself (a string). E.g.
    ``"y"`` -> True, ``"08"`` -> 8.0, ``"1e3"`` -> 1000.0, ``"0o17"`` -> 15, ``"1:30"`` -> ``"1:30"``
    (no sexagesimal numbers, unlike PyYAML). Timestamps stay strings (they are no number either)."""
    if text in _WORDS:
        return _WORDS[text]
    if text[:1] == ".":  # strconv.ParseFloat; an overflow is an error there, so a string
        value = float(text) if re.fullmatch(r"\.[0-9]+([eE][-+]?[0-9]+)?", text) else math.inf
        return value if math.isfinite(value) else text
    if not text or text[0] not in "+-0123456789":
        return text
    plain = text.replace("_", "")
    if _GO_INT.fullmatch(plain):  # ParseInt(plain, 0, 64), then ParseUint, then the float rule
        sign, digits = (-1, plain[1:]) if plain[0] == "-" else (1, plain.lstrip("+"))
        prefixed = len(digits) > 1 and digits[0] == "0" and not digits[1].isdigit()
        base = {"x": 16, "o": 8, "b": 2}[digits[1].lower()] if prefixed else 8 if digits[:1] == "0" else 10
        value = sign * int(digits[2:] if prefixed else digits, base)
        unsigned = plain[0] not in "+-"
        if value in _INT64:
            return value
        if unsigned and value < 2 ** 64:
            return value  # a uint64: no int64, so ``json_key`` refuses it as kubectl does
        if _GO_FLOAT.fullmatch(plain) and math.isfinite(float(plain)):
            return float(plain)
        return value if unsigned else text  # a big.Int after ParseUint's range error
    if _GO_FLOAT.fullmatch(plain):
        value = float(plain)
        return value if math.isfinite(value) else text
    return text


def json_key(value) -> str | None:
    """The JSON object key ``sigs.k8s.io/yaml`` makes of a YAML key read as ``value`` (a str, bool,
    int, float, None, ...): a string as is, ``true``/``false``, an int64 in decimal, a float as Go's
    ``FormatFloat(f, 'g', -1, 32)`` (``1.0`` -> ``"1"``, ``1e6`` -> ``"1e+06"``, ``.inf``); None for
    a key kubectl refuses (null, an integer beyond int64, bytes, a list, a mapping, a date)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if value in _INT64 else None
    if isinstance(value, float):
        return _float32_g(value)
    return None


def kubectl_reads(plain: bool, text: str, value):
    """The key as kubectl reads it: ``go_yaml_plain(text)`` for a ``plain`` untagged scalar, else
    ``value``, the key as the agent's loader constructed it (a quoted or tagged key: the readers
    agree), except that go-yaml reads a ``!!timestamp`` key as its text and a ``!!binary`` one as
    the string of its bytes."""
    if plain:
        return go_yaml_plain(text)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return text
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def problem(text: str, value, read) -> str | None:
    """Why the key written ``text`` may not be used, or None for a string to both readers:
    ``value`` is what the agent's loader (PyYAML, YAML 1.1) made of it, ``read`` what kubectl does
    (``kubectl_reads``). E.g. ``key true is a boolean, not a string (kubectl would make it "true");
    quote it: "true"``."""
    if isinstance(value, str) and isinstance(read, str):
        return None
    seen = read if not isinstance(read, str) else value
    kind = ("null" if seen is None else "a boolean" if isinstance(seen, bool) else "an integer"
            if isinstance(seen, int) else "a number" if isinstance(seen, float) else _kind(seen))
    shown = f"key {text}" if text else "an empty key"
    form = json_key(read)
    said = ("kubectl refuses such a key" if form is None else f'kubectl would make it "{form}"'
            if not isinstance(read, str) else f'kubectl would read it as the string "{form}"')
    words = "YAML 1.1 reads unquoted yes/no, on/off and, for kubectl, y/n as booleans; " \
        if isinstance(seen, bool) and text.lower() not in ("true", "false") else ""
    return f'{shown} is {kind}, not a string ({words}{said}); quote it: "{text}"'


def _kind(value) -> str:
    """What else a key can be constructed as (a tagged key: ``!!binary``, ``!!timestamp``)."""
    if isinstance(value, (datetime.date, datetime.datetime)):
        return "a timestamp"
    return {bytes: "binary data"}.get(type(value), type(value).__name__)


def _float32_g(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, 32)`` (the shortest digits that read back as the
    same float32), with go-yaml's ``.inf``/``-.inf``/``.nan``."""
    if math.isnan(value):
        return ".nan"
    try:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:  # beyond float32: Go's float32(value) is infinite
        bits = 0xFF800000 if value < 0 else 0x7F800000
    negative, exponent, mantissa = bits >> 31, (bits >> 23) & 0xFF, bits & 0x7FFFFF
    sign = "-" if negative else ""
    if exponent == 0xFF:
        return "-.inf" if negative else ".inf"
    if exponent == 0 and mantissa == 0:
        return f"{sign}0"
    digits, point = _shortest(exponent, mantissa)
    exp = point - 1
    if exp < -4 or exp >= 6:  # %e: at least two exponent digits
        return f"{sign}{digits[0]}{'.' + digits[1:] if len(digits) > 1 else ''}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    whole = digits[:point].ljust(point, "0")
    return f"{sign}{whole}{'.' + digits[point:] if len(digits) > point else ''}"


def _shortest(exponent: int, mantissa: int) -> tuple[str, int]:
    """(digits, decimal point) of the positive float32 with these biased exponent and mantissa bits:
    the fewest digits inside its rounding interval (closed when the mantissa is even, as Go's
    ``roundShortest``), the nearer of the two candidates when both fit (a tie: the even one);
    the value is ``0.digits * 10**point``."""
    if exponent == 0:
        mant, power, below = mantissa, -149, Decimal(2) ** -150
    else:
        mant, power = mantissa | 1 << 23, exponent - 150
        below = Decimal(2) ** (power - 2 if mantissa == 0 and exponent > 1 else power - 1)
    with localcontext() as context:
        context.prec = 400  # exact: a float32 has at most 112 significant decimal digits
        return _digits(mant, power, below)


def _digits(mant: int, power: int, below: Decimal) -> tuple[str, int]:
    exact = Decimal(mant) * Decimal(2) ** power
    low, high = exact - below, exact + Decimal(2) ** (power - 1)
    inside = (lambda c: low <= c <= high) if mant % 2 == 0 else (lambda c: low < c < high)
    for count in range(1, 18):
        step = Decimal(10) ** (exact.adjusted() - count + 1)
        down = (exact // step) * step
        fits = [c for c in (down, down + step) if inside(c)]
        if fits:
            best = min(fits, key=lambda c: (abs(c - exact), int(c / step) % 2))
            text = format(best.normalize(), "e")
            mantissa_text, _, exp_text = text.partition("e")
            digits = mantissa_text.replace(".", "")
            return digits, int(exp_text) + 1
    raise AssertionError("no float32 needs more than 9 digits")
