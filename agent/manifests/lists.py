"""``kind: List`` documents (``apiVersion: v1``), as ``kubectl apply -f`` accepts them. Pure.

Why: ``kubectl get -o yaml`` writes several objects as one ``List``, and ``kubectl apply -f``
applies its items; the agent refused the whole file ("only Application documents are
supported"). A List is unpacked here and each item is checked by ``manifests`` exactly as a
document of the same file would be: an item's errors name the file and the item's own line,
its fields are named from the item (``spec.replicas``, not ``items[0].spec.replicas``), and an
item that is not an Application (also a List inside a List) gets the error a document of that
kind gets. The List's own keys are ``apiVersion``, ``kind``, ``items`` and ``metadata`` (kubectl
writes ``metadata: {resourceVersion: ""}``; it is ignored); any other key is refused.
"""

from __future__ import annotations

from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from agent.api.schema import did_you_mean

API_VERSION, KIND = "v1", "List"
ALLOWED = ("apiVersion", "kind", "metadata", "items")


def is_list(data) -> bool:
    """True for a constructed document that is a ``v1`` ``List``."""
    return isinstance(data, dict) and data.get("apiVersion") == API_VERSION and data.get("kind") == KIND


def items(node, data: dict) -> tuple[list[tuple[object, object]], list[tuple[tuple, str]]]:
    """The items of the List ``data`` (composed from the YAML ``node``) and the List's own
    problems. Returns ``([(item node, item value), ...], [(path inside the List, message), ...])``;
    a missing or null ``items`` is an empty List. The item nodes carry the items' line marks."""
    problems: list[tuple[tuple, str]] = []
    for key in data:
        if key not in ALLOWED:
            problems.append(((key,), f"unknown field in a List{did_you_mean(key, ALLOWED)} "
                                     f"(allowed: {', '.join(ALLOWED)})"))
    values = data.get("items")
    if values is None:
        return [], problems
    if not isinstance(values, list):
        problems.append((("items",), f"must be a list of Application documents, not {_kind(values)}"))
        return [], problems
    value_node = next((v for k, v in node.value if isinstance(k, ScalarNode) and k.value == "items"), None) \
        if isinstance(node, MappingNode) else None
    if not isinstance(value_node, SequenceNode) or len(value_node.value) != len(values):
        return [(node, value) for value in values], problems  # never met: the values came from node
    return list(zip(value_node.value, values)), problems


def _kind(value) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", dict: "a mapping"}.get(
        type(value), type(value).__name__)
