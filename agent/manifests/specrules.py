"""The rules of an Application's ``spec`` (``schema.STRICT_SPEC_SCHEMA``) and their wording. Pure.

Kept apart from ``manifests`` so that module stays about documents; ``problems`` is what
``manifests`` reports for a document's ``spec``.
"""

from __future__ import annotations

from agent.api.schema import STRICT_SPEC_SCHEMA, STRICT_SPEC_VALIDATOR as _SPEC_VALIDATOR, did_you_mean
from agent.manifests.nodes import show as _show, type_name as _type_name

_SPEC_FIELDS = STRICT_SPEC_SCHEMA["properties"]


def problems(spec) -> list[tuple[tuple, str]]:
    """(path inside spec, message) for every violation of STRICT_SPEC_SCHEMA, and for an
    ``image`` holding whitespace (blank, ``"nginx :1"``, leading or trailing blanks)."""
    out: list[tuple[tuple, str]] = []
    for e in _SPEC_VALIDATOR.iter_errors(spec):
        sub = tuple(e.absolute_path)
        if e.validator == "required":
            out += [((k,), "is required") for k in e.validator_value if k not in e.instance]
        elif e.validator == "additionalProperties":
            allowed = ", ".join(sorted(_SPEC_FIELDS))
            out += [((k,), f"unknown field{did_you_mean(k, _SPEC_FIELDS, 'spec.')} (allowed: {allowed})")
                    for k in e.instance if k not in _SPEC_FIELDS]
        elif not sub and e.validator == "type":
            out.append(((), f"must be a mapping, not {_type_name(spec)}"))
        elif e.validator == "pattern" and sub == ("image",):
            continue  # no whitespace: said below, in words
        elif len(sub) == 1 and sub[0] in _SPEC_FIELDS:
            out.append((sub, f"must be {_rule(_SPEC_FIELDS[sub[0]])} (got {_show(e.instance)})"))
        else:
            out.append((sub, e.message))
    image = spec.get("image") if isinstance(spec, dict) else None
    if isinstance(image, str) and any(c.isspace() for c in image):
        # the API server refuses leading or trailing whitespace; no image reference holds any
        out.append((("image",), f"must be a container image reference with no whitespace (got {_show(image)})"))
    return sorted(set(out), key=lambda p: (list(map(str, p[0])), p[1]))


def _rule(schema: dict) -> str:
    """Human wording of a scalar property schema, e.g. 'an integer between 1 and 65535' or
    'true or false'."""
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if schema.get("type") == "boolean":
        return "true or false"
    if schema.get("type") == "string":
        return "a non-empty string" if schema.get("minLength", 0) >= 1 else "a string"
    if lo is not None and hi is not None:
        return f"an integer between {lo} and {hi}"
    return f"an integer >= {lo}" if lo is not None else "an integer"
