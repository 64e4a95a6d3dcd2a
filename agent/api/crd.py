"""The Application CRD as shipped with the package, and validation against its schema. Pure.

``agent/crd.yaml`` is package data, a byte-for-byte copy of the repository's ``crd.yaml`` (a
unit test keeps them equal), so ``validate`` applies the API server's own rules even when the
agent is installed from a wheel with no checkout around it.

The API server validates a custom resource against the version's ``openAPIV3Schema``; this
module does the same with ``jsonschema`` (Kubernetes extensions such as
``x-kubernetes-list-type`` are ignored: they constrain merges, not single documents). Integers
are Kubernetes integers: ``true`` and ``3.0`` are not integers.
"""

from __future__ import annotations

import functools
from importlib import resources

import yaml
from jsonschema import Draft202012Validator, validators

from agent.api.schema import GROUP, KIND, VERSION

CRD_RESOURCE = "crd.yaml"

_Validator = validators.extend(Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)))


def crd_text() -> str:
    """The packaged ``crd.yaml`` as text (UTF-8)."""
    return resources.files("agent").joinpath(CRD_RESOURCE).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def openapi_schema() -> dict:
    """The ``openAPIV3Schema`` of the served version ``v1`` of the Application CRD, as a dict.
    Raises ``LookupError`` when the packaged CRD has no such version (a packaging bug)."""
    crd = yaml.load(crd_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # our own file: C speed
    spec = crd["spec"]
    if (spec["group"], spec["names"]["kind"]) != (GROUP, KIND):
        raise LookupError(f"packaged crd.yaml defines {spec['names']['kind']}.{spec['group']}, not {KIND}.{GROUP}")
    for version in spec["versions"]:
        if version["name"] == VERSION and version.get("served"):
            return version["schema"]["openAPIV3Schema"]
    raise LookupError(f"packaged crd.yaml serves no version {VERSION}")


@functools.lru_cache(maxsize=1)
def _validator():
    return _Validator(openapi_schema())


def problems(document: dict) -> list[tuple[tuple, str]]:
    """Every violation of the CRD's schema in one Application ``document`` (the body as
    applied: apiVersion, kind, metadata, spec; ``status`` is never applied and is left out).
    Returns (field path as a tuple of keys and indexes, message), sorted; empty when valid."""
    body = {k: v for k, v in document.items() if k != "status"}
    found = {(tuple(e.absolute_path), e.message) for e in _validator().iter_errors(body)}
    return sorted(found, key=lambda p: (list(map(str, p[0])), p[1]))
