"""``metadata`` of an Application from Git, checked as strictly as ``spec``. Pure.

Why: an unknown key used to be ignored, so ``namspace: billing`` synced the Application into the
default namespace with exit 0. Only the keys a user writes are accepted (``name``, ``namespace``,
``labels``, ``annotations``); everything the API server sets (``uid``, ``resourceVersion``,
``managedFields``, ...) or the agent does not support (``generateName``, ``finalizers``,
``ownerReferences``) is refused by name. Labels and annotations follow the API server's own
rules (``k8s.io/apimachinery/pkg/util/validation``): keys are qualified names with an optional
DNS-1123 subdomain prefix, label values are at most 63 characters of ``[A-Za-z0-9-_.]`` starting
and ending alphanumeric (or empty), annotation values any string, all annotations together at
most 256 KiB. ``name`` and ``namespace`` are checked by ``manifests`` (strings, DNS-1123 labels).
"""

from __future__ import annotations

import re

ALLOWED = ("name", "namespace", "labels", "annotations")
SERVER_SET = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink",
              "deletionTimestamp", "deletionGracePeriodSeconds")
"""Keys the API server writes into every object (``ObjectMeta``), which ``kubectl get -o yaml``
prints: refused with a message that says so, since copying such output into Git is how they
arrive."""
ANNOTATIONS_MAX_BYTES = 256 * 1024  # TotalAnnotationSizeLimitB in apimachinery
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
KEY_RULE = ("must be a qualified name: an optional DNS-1123 subdomain prefix (at most 253 characters) "
            "and '/', then a name of at most 63 letters, digits, '-', '_' or '.' starting and ending with "
            "a letter or digit")
VALUE_RULE = ("must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter "
              "or digit (or empty)")


def qualified_name_ok(key: str) -> bool:
    """True for a label or annotation key such as ``app``, ``example.com/tier``."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_NAME.fullmatch(name))


def label_value_ok(value: str) -> bool:
    """True for a label value: empty, or at most 63 characters of the allowed set."""
    return value == "" or (len(value) <= 63 and bool(_NAME.fullmatch(value)))


def problems(meta: dict) -> list[tuple[tuple, str]]:
    """Every rule ``meta`` (a ``metadata`` mapping) breaks, as (path inside metadata, message),
    e.g. ``(("namspace",), "unknown field (allowed: ...)")`` or ``(("labels", "tier"), "...")``.
    Does not check ``name`` and ``namespace`` values. Empty list when valid."""
    out: list[tuple[tuple, str]] = []
    for key in meta:
        if key not in ALLOWED:
            close = next((field for field in ALLOWED if _close(key, field)), None)
            hint = f" (did you mean metadata.{close}?)" if close else ""
            if key in SERVER_SET:
                hint = ": the API server sets it (kubectl get -o yaml prints it); remove it from Git"
            out.append(((key,), f"unknown field{hint} (allowed: {', '.join(ALLOWED)})"))
    for field in ("labels", "annotations"):
        if field not in meta or meta[field] is None:
            continue
        mapping = meta[field]
        if not isinstance(mapping, dict):
            out.append(((field,), f"must be a mapping of strings to strings, not {_kind(mapping)}"))
            continue
        for key, value in mapping.items():
            if not qualified_name_ok(key):
                out.append(((field, key), f"key {key!r} {KEY_RULE}"))
            if not isinstance(value, str):
                out.append(((field, key), not_a_string(value)))
            elif field == "labels" and not label_value_ok(value):
                out.append(((field, key), f"value {value!r} {VALUE_RULE}"))
        if field == "annotations":
            size = sum(len(k.encode()) + len(v.encode()) for k, v in mapping.items() if isinstance(v, str))
            if size > ANNOTATIONS_MAX_BYTES:
                out.append(((field,), f"annotations total {size} bytes, above the limit of "
                            f"{ANNOTATIONS_MAX_BYTES} bytes"))
    return out


def not_a_string(value) -> str:
    """The message for a value that must be a string (a name, namespace, label or annotation
    value) and is not, e.g. ``must be a string, not an integer (quote it: "123")``: YAML reads
    unquoted ``123``, ``1.5``, ``true`` or ``null`` as other types, as kubectl does (it refuses
    them). Booleans get the YAML 1.1 words instead of a spelling (``yes`` was read as True); a
    list or mapping gets no hint."""
    if value is None:
        return "must be a string, not null"
    if isinstance(value, bool):
        return ("must be a string, not a boolean (YAML 1.1 reads unquoted true/false, yes/no and on/off "
                "as booleans; quote it)")
    if isinstance(value, (list, dict)):
        return f"must be a string, not {_kind(value)}"
    return f'must be a string, not {_kind(value)} (quote it: "{value}")'


def _close(word, target: str) -> bool:
    """A likely typo of ``target``: same letters give or take one (namspace, namepsace, namesapce,
    lables). Deliberately stricter than the spec's difflib hint: metadata holds many keys the API
    server sets (uid, generateName, finalizers), and none of those should read as a typo."""
    if not isinstance(word, str) or word == target or abs(len(word) - len(target)) > 1:
        return False
    return sorted(word) == sorted(target) or sum(a != b for a, b in zip(word, target)) <= 1 \
        or any(word == target[:i] + target[i + 1:] for i in range(len(target)))


def _kind(value) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", list: "a list", dict: "a mapping",
            str: "a string"}.get(type(value), type(value).__name__)
