"""YAML out: what ``get -o yaml`` prints, the diff of ``diff`` and ``sync --dry-run``, and
``crd.yaml``. Pure.

Why here: PyYAML is imported only by ``manifests`` (the import contracts in ``pyproject.toml``),
so every YAML the agent writes is written by these two functions. Both write any ``dict``,
``list`` or ``str`` subclass as a plain mapping, list or string (the vocabulary's ``StrEnum``s; a
pass's live objects are ``FrozenDict`` and ``FrozenList``, ``agent/kube/share.py``, or the store's
packed ``dict`` subclasses, ``agent/kube/packed.py``), and neither ever writes a Python tag.
"""

from __future__ import annotations

import yaml


class _Dumper(yaml.SafeDumper):
    """The safe dumper, taught that a ``dict`` or ``list`` subclass is a mapping or a list."""


_Dumper.add_multi_representer(dict, yaml.SafeDumper.represent_dict)
_Dumper.add_multi_representer(list, yaml.SafeDumper.represent_list)
_Dumper.add_multi_representer(str, yaml.SafeDumper.represent_str)  # the vocabulary's StrEnums are strings


class _Plain(_Dumper):
    """Writes every value out: a pass's live objects share equal parts (``share``), which YAML
    would otherwise print once with an anchor (``&id001``) and then as aliases (``*id001``), a
    change of lines where nothing changed. ``kubectl diff`` never prints aliases either."""

    def ignore_aliases(self, data) -> bool:
        return True


def text(doc, *, width: int | None = None) -> str:
    """``doc`` (a JSON value) as YAML text in block style, keys in their order, non-ASCII
    characters as they are, lines folded at ``width`` characters (None: PyYAML's 80);
    newline-terminated."""
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=width)


def plain_lines(doc) -> list[str]:
    """``doc`` as YAML lines with sorted keys and no anchors or aliases, each newline-terminated
    (what a unified diff compares)."""
    return yaml.dump(doc, Dumper=_Plain, sort_keys=True, default_flow_style=False).splitlines(keepends=True)
