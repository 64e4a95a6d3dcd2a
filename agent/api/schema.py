"""Schema and identity constants of the Application custom resource.

The resource is ``applications.heumsi.github.io``, version ``v1``, kind
``Application``, namespaced.
"""

import difflib

from jsonschema import Draft202012Validator, validators

GROUP = "heumsi.github.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "Application"
PLURAL = "applications"

SPEC_SCHEMA: dict = {
    "type": "object",
    "description": "Desired state of an Application: one container image run as a "
    "Deployment and exposed on one port by a Service.",
    "required": ["image", "replicas", "port"],
    "properties": {
        "image": {
            "type": "string",
            "minLength": 1,
            "pattern": "^\\S+$",
            "description": "Container image reference, e.g. nginx:latest; no whitespace anywhere.",
        },
        "replicas": {
            "type": "integer",
            "minimum": 0,
            "maximum": 2147483647,
            "description": "Number of pod replicas (0 scales the application down; at most 2147483647, a Deployment's int32).",
        },
        "port": {
            "type": "integer",
            "minimum": 1,
            "maximum": 65535,
            "description": "TCP port the container listens on; also the Service port.",
        },
        "suspend": {
            "type": "boolean",
            "description": "true stops the agent from applying, correcting, recreating or pruning the "
            "children; the Application is still applied and is never pruned. Omitted means false.",
        },
    },
}
"""OpenAPI v3 schema of ``spec``, copied verbatim into the CRD's openAPIV3Schema.

Deliberately has no ``additionalProperties``: Kubernetes structural schemas forbid
``additionalProperties`` next to ``properties`` ("additionalProperties and properties
are mutual exclusive", apiextensions validation). The API server instead prunes unknown
fields. Use ``STRICT_SPEC_SCHEMA`` for client-side validation that rejects them.
"""

STRICT_SPEC_SCHEMA: dict = {**SPEC_SCHEMA, "additionalProperties": False}
"""``SPEC_SCHEMA`` plus ``additionalProperties: false``; for local (jsonschema)
validation only, never for the CRD."""


def did_you_mean(key, known, prefix: str = "") -> str:
    """The hint for an unknown field ``key``: ``" (did you mean spec.replicas?)"`` naming the
    field of ``known`` (an iterable of names, shown after ``prefix``) closest to it by
    ``difflib.get_close_matches`` (its default cutoff, 0.6), or ``""`` when none is close or
    ``key`` is not a string. E.g. ``did_you_mean("replica", ("image", "replicas"), "spec.")``."""
    if not isinstance(key, str):
        return ""
    match = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {prefix}{match[0]}?)" if match else ""


_Validator = validators.extend(Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)))


def validator(schema: dict):
    """The one validator of the agent: a JSON Schema (draft 2020-12) validator of ``schema``
    whose integers are Kubernetes integers (``true`` and ``3.0`` are not integers, where
    jsonschema's default accepts an integral float). ``validate``, the pass and the CRD all
    check through it."""
    Draft202012Validator.check_schema(schema)
    return _Validator(schema)


SPEC_VALIDATOR = validator(SPEC_SCHEMA)
"""``SPEC_SCHEMA`` as the API server checks it (unknown fields are pruned there, not refused):
what the pass checks a live Application's ``spec`` with before rendering its children."""
STRICT_SPEC_VALIDATOR = validator(STRICT_SPEC_SCHEMA)
"""``STRICT_SPEC_SCHEMA``: what ``validate`` and the pass check a ``spec`` from Git with."""
