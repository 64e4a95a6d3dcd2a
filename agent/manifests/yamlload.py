"""The two YAML loaders of ``manifests``: hardened pure-Python, and libyaml's C parser under a
bounded composer. See ``manifests``' docstring for the rules; kept apart so that module stays
about validation.

Both reject aliases, bound nesting at ``MAX_DEPTH`` without recursion and record repeated keys
and keys that are not strings (``key_problems``) for their caller to refuse. The pure-Python ``_Loader`` reports each
problem (line, message) and carries on with the next document; the C one (``_CLoader``, only
when PyYAML was built with libyaml: ``FAST``) raises ``_Bail`` at the first problem, and its
caller then reads the file with ``_Loader``.
"""

from __future__ import annotations

import sys

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from agent.manifests import keys
from agent.manifests.nodes import index

MAX_DEPTH = 100
"""Deepest allowed nesting of YAML collections (mappings and sequences) in a document."""

_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_TOO_DEEP = f"nesting deeper than {MAX_DEPTH} levels is not supported"


class _TooDeep(yaml.scanner.ScannerError):
    def __init__(self, mark):
        super().__init__(None, None, _TOO_DEEP, mark)


class _Bail(Exception):
    """The fast path met something only the pure-Python loader reports in its own words."""


class _Strict:
    """Mapping keys are checked as Kubernetes reads them (``keys``), in both loaders: one
    (mapping node, key text or None, 1-based line, message, ambiguous) per problem goes to
    ``key_problems`` and construction carries on, so the caller can refuse just the document or
    List item that holds them and still check the rest of it. A key that is not a string (to
    PyYAML or to kubectl), a list or mapping used as a key (key text None) or a merge key (``<<``)
    is left out of the constructed mapping; a repeated key (the same JSON string as an earlier key of the mapping:
    ``1`` and ``"1"`` are one key, ``1`` and ``true`` two) keeps its last value, as PyYAML keeps
    it, and is ``ambiguous``: nothing under it is known. The caller empties ``key_problems``
    before constructing each document."""

    key_problems: list

    def compose_scalar_node(self, anchor):
        """PyYAML's node, marked ``plain`` when it is a plain scalar with no tag (go-yaml resolves
        such a key by its own YAML 1.1 rules, see ``keys.go_yaml_plain``)."""
        event = self.peek_event()
        node = super().compose_scalar_node(anchor)
        node.plain = event.tag is None and event.implicit[0]
        return node

    def construct_mapping(self, node, deep=False):
        seen: dict[str, tuple[int, str]] = {}  # JSON key -> (line, key as shown)
        kept = []
        for key_node, value_node in node.value:
            at = key_node.start_mark.line + 1
            if not isinstance(key_node, ScalarNode):
                kind = "list" if isinstance(key_node, SequenceNode) else "mapping"
                self.key_problems.append((node, None, at, f"a {kind} cannot be a key: keys must be strings "
                                                          "(JSON, and so Kubernetes, has no other keys)", False))
                continue
            if key_node.tag == _MERGE:
                self.key_problems.append((node, key_node.value, at, "merge keys (<<) are not supported: write the "
                                                                    "keys out", False))
                continue
            key = self.construct_object(key_node, deep=True)
            read = keys.kubectl_reads(getattr(key_node, "plain", False), key_node.value, key)
            why, form = keys.problem(key_node.value, key, read), keys.json_key(read)
            shown = key_node.value if why else repr(key)  # 'x' for a string, as written otherwise
            if form in seen:
                line, first = seen[form]
                message = f"duplicate key {shown} (first defined on line {line})"
                if first != shown:  # two spellings or types of one JSON key
                    message = f'duplicate key {shown} (first defined on line {line} as {first}; ' \
                              f'kubectl reads both as "{form}")'
                self.key_problems.append((node, key_node.value, at, message, True))
            elif form is not None:
                seen[form] = (at, shown)
            if why:
                self.key_problems.append((node, key_node.value, at, why, False))
            else:
                kept.append((key_node, value_node))
        if len(kept) != len(node.value):
            node = MappingNode(node.tag, kept, node.start_mark, node.end_mark, node.flow_style)
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
        self.key_problems = []

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
            self.key_problems = []

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


# YAML 1.1 timestamps would become datetime objects, and a plain ``=`` the "value" tag that no
# constructor knows; go-yaml (so kubectl) reads both as strings, and so do the loaders here.
_AS_STRINGS = ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value")
_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag not in _AS_STRINGS]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct_int(loader, node):
    """PyYAML's integer, or the text as a string when it has more digits than Python converts
    (``sys.get_int_max_str_digits``, 4300): go-yaml, failing to parse such a number as an int64,
    uint64 or float64, reads it as a string too, so the schema then names the field."""
    digits = node.value.replace("_", "").lstrip("+-")
    limit = sys.get_int_max_str_digits()  # 0: no limit
    if limit and digits.isdigit() and len(digits) > limit:
        return loader.construct_scalar(node)
    return SafeConstructor.construct_yaml_int(loader, node)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
if FAST:
    _CLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers
    _CLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def construct(loader, node) -> tuple:
    """Construct the document ``node`` composed by ``loader`` (either loader). Returns (data,
    {field path: line} of ``nodes.index``, key problems, failure): the key problems (see
    ``_Strict``) as (field path of the key, or of its mapping for a key that is a list or mapping
    or is empty, or None when it is inside a key, 1-based line, message, ambiguous); failure None,
    or (1-based line, message) when construction failed (data is then None; it is also None for an
    empty document)."""
    lines, paths = index(node)
    loader.key_problems = []
    failure = None
    try:
        data = loader.construct_document(node)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as e:
        loader.constructed_objects, loader.recursive_objects = {}, {}
        loader.state_generators, loader.deep_construct = [], False
        mark = getattr(e, "problem_mark", None)
        data, failure = None, (mark.line + 1 if mark else node.start_mark.line + 1,
                               f"invalid YAML value: {getattr(e, 'problem', None) or e}")
    problems = [(paths[id(m)] + ((text,) if text else ()) if id(m) in paths else None, at, message, ambiguous)
                for m, text, at, message, ambiguous in loader.key_problems]
    return data, lines, problems, failure


YAMLError = yaml.YAMLError
"""PyYAML's error: what ``safe_load`` raises, and what the Kubernetes client raises for a
kubeconfig that is not YAML (``agent/kube/clusterconfig.py`` catches it by this name)."""


def safe_load(text: str):
    """The one YAML document in ``text`` as plain values, with PyYAML's safe loader: what the
    Kubernetes client reads a kubeconfig with (not an Application: those take ``_Loader``).
    Raises YAMLError (its ``problem_mark`` and ``problem`` say where and why)."""
    return yaml.safe_load(text)
