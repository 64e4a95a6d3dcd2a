"""Field paths of YAML node trees, and how values are named in messages. Pure.

Kept apart from ``manifests`` (which uses them for every document and ``kind: List`` item) so
that module stays about the Application rules. A field path is a tuple of mapping keys and
sequence indexes, e.g. ``("spec", "replicas")`` or ``("items", 0)``.
"""

from __future__ import annotations

import json
import math

from yaml.nodes import MappingNode, ScalarNode, SequenceNode


def index(root) -> tuple[dict[tuple, int], dict[int, tuple]]:
    """Walk a node tree iteratively: {field path: 1-based line of its key or item}
    and {id(node): its field path}."""
    lines: dict[tuple, int] = {(): root.start_mark.line + 1}
    paths: dict[int, tuple] = {}
    stack = [((), root)]
    while stack:
        path, node = stack.pop()
        paths[id(node)] = path
        if isinstance(node, MappingNode):
            for key, value in node.value:
                sub = path + (key.value if isinstance(key, ScalarNode) else "?",)
                lines.setdefault(sub, key.start_mark.line + 1)
                stack.append((sub, value))
        elif isinstance(node, SequenceNode):
            for i, value in enumerate(node.value):
                lines[path + (i,)] = value.start_mark.line + 1
                stack.append((path + (i,), value))
    return lines, paths


def line(lines: dict[tuple, int], path: tuple) -> int:
    """Line of the deepest known prefix of ``path`` (at worst the document start), from the
    ``lines`` of ``index``."""
    while path not in lines:
        path = path[:-1]
    return lines[path]


def dotted(path: tuple) -> str:
    """``("spec", "ports", 0, "name")`` as ``spec.ports[0].name``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def non_json(obj) -> tuple[tuple, str] | None:
    """First (path, message) of a value JSON cannot represent, else None (see ``json_only``)."""
    found = json_only(obj)[1]
    return found[0][:2] if found else None


def json_only(obj) -> tuple[object, list[tuple[tuple, str, tuple]]]:
    """``obj`` with what JSON cannot represent left out, and one (path, message, left out) per
    such entry, in document order: ``path`` is where it is reported (the mapping, for a key that
    is not a string), ``left out`` the path of the entry dropped (a mapping's entry is removed, a
    list's entry becomes None so the indexes after it keep their meaning). Never recursive."""
    problems: list[tuple[tuple, str, tuple]] = []
    holder: list = [None]
    stack: list[tuple[tuple, object, object, object]] = [((), obj, holder, 0)]
    while stack:
        path, value, into, slot = stack.pop()
        if isinstance(value, dict):
            copy: dict = {}
            into[slot] = copy
            todo = []
            for key, sub in value.items():
                if not isinstance(key, str):
                    problems.append((path, f"key {key!r} is not a string (YAML 1.1 reads unquoted yes/no/on/off "
                                           "as booleans and digits as numbers; quote it)", path + (key,)))
                    continue
                if not text_ok(key):
                    problems.append((path, f"key {key!r} {SURROGATE}", path + (key,)))
                    continue
                copy[key] = None  # keeps the order of the keys
                todo.append((path + (key,), sub, copy, key))
            stack.extend(reversed(todo))
        elif isinstance(value, list):
            into[slot] = copy_list = [None] * len(value)
            stack.extend(reversed([(path + (i,), sub, copy_list, i) for i, sub in enumerate(value)]))
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append((path, "must be a finite number (JSON has no .inf or .nan)", path))
            _leave_out(into, slot)
        elif isinstance(value, str) and not text_ok(value):
            problems.append((path, SURROGATE, path))
            _leave_out(into, slot)
        elif not (value is None or isinstance(value, (str, int, float))):
            problems.append((path, f"{type_name(value)} values (e.g. from !!binary or !!set tags) are not supported",
                             path))
            _leave_out(into, slot)
        else:
            into[slot] = value
    return holder[0], problems


SURROGATE = "holds a lone surrogate (an escape such as \\ud800 in a double-quoted string): not valid UTF-8 text"


def text_ok(text: str) -> bool:
    """True when ``text`` encodes as UTF-8: YAML's ``"\\ud800"`` escape makes a lone surrogate,
    which JSON, the API server and every encoder of the agent refuse."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _leave_out(into, slot) -> None:
    if isinstance(into, dict):
        del into[slot]


def kind_unknown(duplicates, is_list: bool) -> bool:
    """True when key problems (``yamlload.construct``: repeated keys, keys that are no strings)
    leave unknown what a document (or ``kind: List`` item) is, so it is refused whole:
    ``duplicates`` holds (field path of each such key, or None when it is inside a key, ...); it is
    so when ``apiVersion`` or ``kind`` is repeated, a key inside a key is, or, for a List
    (``is_list``), a key outside its items (``("items", i, ...)``, or ``("items", i)`` for a list
    or mapping used as a key of an item) is."""
    return any(sub is None or sub in (("apiVersion",), ("kind",))
               or (is_list and not (len(sub) >= 2 and sub[0] == "items" and isinstance(sub[1], int)))
               for sub, *_ in duplicates)


def under(path: tuple, paths) -> bool:
    """True when ``path`` is one of ``paths`` (field paths) or lies inside one of them."""
    return any(path[:len(p)] == p for p in paths)


SHOW_MAX = 80  # characters of a value a message quotes; a longer one is cut and its length said


def show(value) -> str:
    """``value`` as JSON (``"web"``, ``123``, ``null``) for a message, else its repr; longer
    than ``SHOW_MAX`` characters, its first ``SHOW_MAX`` then ``... (N characters)``, so one
    huge value keeps the message one readable line."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= SHOW_MAX else f"{text[:SHOW_MAX]}... ({len(text)} characters)"


def type_name(value) -> str:
    """``a string``, ``an integer``, ``a mapping``, ... for a message ("must be X, not Y")."""
    names = {type(None): "null", dict: "a mapping", list: "a list", str: "a string",
             int: "an integer", float: "a number", bool: "a boolean"}
    return names.get(type(value), type(value).__name__)


def scalar(node, path: tuple, absent=None):
    """The string at ``path`` (mapping keys) of the node tree ``node``, read from the nodes alone
    (for a document that could not be constructed): ``absent`` when a key is missing; None when a
    key occurs more than once, a value on the way is no mapping or the value is no plain string."""
    entry = _entry(node, path)
    if entry is None or entry == "absent":
        return absent if entry else None
    value = entry[1]
    return value.value if isinstance(value, ScalarNode) and value.tag == "tag:yaml.org,2002:str" else None


def key_line(node, path: tuple) -> int | None:
    """The 1-based line of the key at ``path`` (mapping keys, at least one) of the node tree
    ``node``, e.g. ``("metadata", "name")``; None when a key is missing or occurs more than once, or
    a value on the way is no mapping."""
    entry = _entry(node, path)
    return entry[0].start_mark.line + 1 if isinstance(entry, tuple) and entry[0] is not None else None


def _entry(node, path: tuple):
    """(key node, value node) at ``path`` of ``node`` ((None, ``node``) for ``()``), ``"absent"``
    when a key is missing, None when a key occurs more than once or a value on the way is no mapping."""
    entry = (None, node)
    for key in path:
        if not isinstance(entry[1], MappingNode):
            return None
        entries = [(k, v) for k, v in entry[1].value if isinstance(k, ScalarNode) and k.value == key]
        if len(entries) != 1:
            return "absent" if not entries else None
        entry = entries[0]
    return entry
