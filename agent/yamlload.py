"""The two YAML loaders of ``manifests``: hardened pure-Python, and libyaml's C parser under a
bounded composer. See ``manifests``' docstring for the rules; kept apart so that module stays
about validation.

Both reject aliases, bound nesting at ``MAX_DEPTH`` without recursion and record duplicate
keys (``duplicates``) for their caller to refuse. The pure-Python ``_Loader`` reports each
problem (line, message) and carries on with the next document; the C one (``_CLoader``, only
when PyYAML was built with libyaml: ``FAST``) raises ``_Bail`` at the first problem, and its
caller then reads the file with ``_Loader``.
"""

from __future__ import annotations

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from .nodes import index

MAX_DEPTH = 100
"""Deepest allowed nesting of YAML collections (mappings and sequences) in a document."""

_NULL = "tag:yaml.org,2002:null"
_TOO_DEEP = f"nesting deeper than {MAX_DEPTH} levels is not supported"


class _TooDeep(yaml.scanner.ScannerError):
    def __init__(self, mark):
        super().__init__(None, None, _TOO_DEEP, mark)


class _Bail(Exception):
    """The fast path met something only the pure-Python loader reports in its own words."""


class _Strict:
    """Duplicate mapping keys are recorded in ``duplicates`` (both loaders), one
    (mapping node, key node, message) per repeated key, and construction carries on (the last
    value is kept, as PyYAML keeps it), so the caller can refuse just the document or List item
    that holds them and still check the rest of it. The caller empties ``duplicates`` before
    constructing each document."""

    duplicates: list

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                if key in seen:
                    self.duplicates.append((node, key_node, f"duplicate key {key!r} (first defined on line {seen[key]})"))
                else:
                    seen[key] = key_node.start_mark.line + 1
            except TypeError:  # unhashable key: SafeConstructor reports it below
                pass
        return super().construct_mapping(node, deep)


class _Loader(_Strict, yaml.SafeLoader):
    """SafeLoader that rejects aliases, bounds nesting and detects duplicate keys.

    The scanner stops a file whose block indentation or flow nesting alone exceeds
    ``MAX_DEPTH`` (PyYAML's scanner is quadratic in flow depth). The composer checks
    the combined depth; alias and depth problems are collected in ``problems``
    (1-based line, message) for the document being composed, so that composing can
    carry on with the next document.
    """

    def __init__(self, stream: str):
        super().__init__(stream)
        self.depth = 0
        self.problems: list[tuple[int, str]] = []
        self.duplicates = []

    def _problem(self, mark, message: str) -> None:
        if all(m != message for _, m in self.problems):
            self.problems.append((mark.line + 1, message))

    def add_indent(self, column):
        if self.indent < column and len(self.indents) >= MAX_DEPTH:
            raise _TooDeep(self.get_mark())
        return super().add_indent(column)

    def fetch_flow_collection_start(self, token_class):
        if self.flow_level >= MAX_DEPTH:
            raise _TooDeep(self.get_mark())
        return super().fetch_flow_collection_start(token_class)

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.get_event()
            self._problem(event.start_mark, "YAML aliases are not supported")
            return ScalarNode(_NULL, "", event.start_mark, event.end_mark)
        if not self.check_event(yaml.CollectionStartEvent):
            return super().compose_node(parent, index)
        if self.depth >= MAX_DEPTH:  # skip the whole collection iteratively
            start = self.peek_event().start_mark
            self._problem(start, _TOO_DEEP)
            level = 0
            while True:
                event = self.get_event()
                level += isinstance(event, yaml.CollectionStartEvent)
                level -= isinstance(event, yaml.CollectionEndEvent)
                if level == 0:
                    return ScalarNode(_NULL, "", start, event.end_mark)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml: every file takes the pure-Python loader
    CParser = None
FAST = CParser is not None
if FAST:
    class _CLoader(_Strict, Composer, CParser, SafeConstructor, Resolver):
        """libyaml's C parser under PyYAML's own composer (Python, so it can be bounded): raises
        ``_Bail`` at the first alias or at nesting deeper than ``MAX_DEPTH`` (libyaml's parser
        is iterative, so deep input never recurses before that)."""

        def __init__(self, stream: str):
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self.depth = 0
            self.duplicates = []

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                raise _Bail()
            if not self.check_event(yaml.CollectionStartEvent):
                return super().compose_node(parent, index)
            if self.depth >= MAX_DEPTH:
                raise _Bail()
            self.depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1


# YAML 1.1 timestamps would become datetime objects; kubectl keeps them as strings.
_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
if FAST:
    _CLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


def construct(loader, node) -> tuple:
    """Construct the document ``node`` composed by ``loader`` (either loader). Returns (data,
    {field path: line} of ``nodes.index``, duplicate keys, failure): the duplicate keys as
    (field path of the key, or None when it is inside a key, 1-based line, message); failure
    None, or (1-based line, message) when construction failed (data is then None; it is also
    None for an empty document)."""
    lines, paths = index(node)
    loader.duplicates = []
    failure = None
    try:
        data = loader.construct_document(node)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as e:
        loader.constructed_objects, loader.recursive_objects = {}, {}
        loader.state_generators, loader.deep_construct = [], False
        mark = getattr(e, "problem_mark", None)
        data, failure = None, (mark.line + 1 if mark else node.start_mark.line + 1,
                               f"invalid YAML value: {getattr(e, 'problem', None) or e}")
    dups = [(paths[id(m)] + (getattr(k, "value", "?"),) if id(m) in paths else None, k.start_mark.line + 1, message)
            for m, k, message in loader.duplicates]
    return data, lines, dups, failure
