"""The rules of ``spec.placement`` and ``spec.volumes`` that the schema cannot say (issue 44 items
2, 4 and 9). Pure.

``problems`` answers ``(path under spec, message)`` pairs, as ``specrules.problems`` does, which
adds them to its own. Each rule looks only at values of the right type: a wrong type is the
schema's problem, said once. The API server's own rules are in ``validateTolerations``,
``ValidateNodeSelector`` (labels) and ``validateVolumes`` of ``k8s.io/kubernetes/pkg/apis/core/
validation``; the agent refuses them offline, and is stricter on spreadAcross and on paths.
"""

from __future__ import annotations

import re

from agent.api import quantity
from agent.api.schema import FILE_PATH_PATTERN, MAX_VOLUMES, SPREAD_KEYS
from agent.manifests.metadata import KEY_RULE, VALUE_RULE, label_value_ok, qualified_name_ok
from agent.manifests.nodes import show as _show

EXISTS_VALUE_RULE = ("must not be given with operator Exists, which matches every value of the key; remove value "
                     "or use operator Equal")
SECONDS_RULE = ("applies only to effect NoExecute (how long a pod stays on a node after such a taint is added); "
                "set effect: NoExecute or remove tolerationSeconds")
NO_KEY_RULE = "must be Exists when key is omitted (a toleration of every taint); give key or operator: Exists"
"""What the API server's ``validateTolerations`` refuses in a toleration: a value with operator
Exists, tolerationSeconds with an effect other than NoExecute, no key without operator Exists."""
PATH_RULE = "an absolute path such as /var/cache/app (no empty segment, no trailing '/', no . or .. segment)"
OVERLAP_RULE = ("a volume's path may not be another mount's path, nor hold it, nor lie under it (one would "
                "hide the other); move one")


def problems(spec: dict) -> list[tuple[tuple, str]]:
    """The problems of ``spec.placement`` (``_placement``) and ``spec.volumes`` (``_volumes``)."""
    return _placement(spec.get("placement")) + _volumes(spec.get("volumes"), spec.get("files"))


def _placement(placement) -> list[tuple[tuple, str]]:
    """nodeSelector keys and values as label keys and values; each toleration (``_toleration``);
    each spreadAcross word at most once (the schema's enum says which words there are)."""
    out: list[tuple[tuple, str]] = []
    if not isinstance(placement, dict):
        return out
    selector = placement.get("nodeSelector")
    if isinstance(selector, dict):
        for key, value in selector.items():
            where = ("placement", "nodeSelector", key)
            if not qualified_name_ok(str(key)):
                out.append((where, f"key {key!r} {KEY_RULE}"))
            if isinstance(value, str) and not label_value_ok(value):
                out.append((where, f"value {value!r} {VALUE_RULE}"))
    tolerations = placement.get("tolerations")
    if isinstance(tolerations, list):
        for i, toleration in enumerate(tolerations):
            if isinstance(toleration, dict):
                out += [(("placement", "tolerations", i) + sub, why) for sub, why in _toleration(toleration)]
    across = placement.get("spreadAcross")
    if isinstance(across, list):
        seen: set[str] = set()
        for i, word in enumerate(across):
            if isinstance(word, str) and word in SPREAD_KEYS and word in seen:
                out.append((("placement", "spreadAcross", i), f"{word!r} is given twice"))
            seen.add(word if isinstance(word, str) else "")
    return out


def _toleration(toleration: dict) -> list[tuple[tuple, str]]:
    """One toleration's rules (``validateTolerations``), each on the field to change."""
    out: list[tuple[tuple, str]] = []
    key, operator, value = toleration.get("key"), toleration.get("operator", "Equal"), toleration.get("value")
    if isinstance(key, str) and key and not qualified_name_ok(key):
        out.append((("key",), f"{key!r} {KEY_RULE}"))
    if key is None and operator != "Exists":
        out.append((("operator",), f"{NO_KEY_RULE} (got {_show(operator)})"))
    if operator == "Exists" and isinstance(value, str) and value:
        out.append((("value",), f"{EXISTS_VALUE_RULE} (got {_show(value)})"))
    elif isinstance(value, str) and not label_value_ok(value):
        out.append((("value",), f"{value!r} {VALUE_RULE}"))
    effect = toleration.get("effect")
    if "tolerationSeconds" in toleration and effect != "NoExecute":
        out.append((("tolerationSeconds",), f"{SECONDS_RULE} (got effect {_show(effect) if effect else 'omitted'})"))
    return out


def _overlap(a: str, b: str) -> bool:
    """True when the paths ``a`` and ``b`` are one, or one holds the other."""
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _volumes(volumes, files) -> list[tuple[tuple, str]]:
    """Each volume's path absolute (``PATH_RULE``) and apart from every path of ``files`` and of
    the other volumes (``OVERLAP_RULE``: said on the volume, and between two volumes on the one
    that lies under the other); its ``sizeLimit`` a quantity above 0 (the API server refuses a
    negative one; 0 would evict the pod on its first write). Nothing past ``MAX_VOLUMES``
    entries: the schema refuses their count, and the overlap check compares every pair."""
    out: list[tuple[tuple, str]] = []
    if not isinstance(volumes, dict) or len(volumes) > MAX_VOLUMES:
        return out
    good = [p for p in volumes if isinstance(p, str) and re.fullmatch(FILE_PATH_PATTERN, p)
            and not any(part in (".", "..") for part in p.split("/"))]
    for path in volumes:
        if path not in good:
            out.append((("volumes", path), f"the path must be {PATH_RULE} (got {_show(path)})"))
    file_paths = [p for p in (files if isinstance(files, dict) else {}) if isinstance(p, str)]
    for path in good:
        for other in file_paths:
            if _overlap(path, other):
                out.append((("volumes", path), f"overlaps the file {other} (spec.files): {OVERLAP_RULE}"))
        for other in good:
            if path.startswith(other + "/"):  # said once, on the inner one
                out.append((("volumes", path), f"lies under the volume {other}: {OVERLAP_RULE}"))
    for path, volume in volumes.items():
        size = (volume.get("emptyDir") or {}).get("sizeLimit") if isinstance(volume, dict) and \
            isinstance(volume.get("emptyDir"), dict) else None
        if isinstance(size, bool) or not isinstance(size, (int, str)):
            continue
        where = ("volumes", path, "emptyDir", "sizeLimit")
        try:
            value, _ = quantity.parse(size)
        except quantity.Invalid as err:
            out.append((where, f"{err} (got {_show(size)})"))
            continue
        if value <= 0:
            out.append((where, f"must be above 0, e.g. 1Gi; omit it for no limit (got {_show(size)})"))
    return out
