"""One copy of each equal part of the live objects a pass holds (hash-consing).

Why a module of its own: a pass holds every listed Application, Deployment and Service, and most
of each is the same from one object to the next: the field names, the managedFields entries,
the defaults the API server fills in (``strategy``, ``terminationMessagePath``, ``ipFamilies``),
the image, the namespace, the timestamps of one second. Measured on listed objects with compacted
managedFields, sharing equal parts takes them from about 6.8 KiB to 2.7 KiB each (the memo
included), which is most of a pass's memory at 10,000 Applications (issue 11).

A shared part is used by many objects, so it must never change: mappings and lists below an
object's top level are ``FrozenDict`` and ``FrozenList``, which raise ``TypeError`` on any
change, and whose ``copy.copy``/``copy.deepcopy`` are ordinary mutable dicts and lists. The top
level stays a plain dict (it is one object's own). Both are ``dict`` and ``list`` subclasses, so
``json.dumps``, ``isinstance`` checks, comparisons and the agent's YAML writer
(``agent/manifests/yamlwrite.py``) see ordinary JSON values.

``run``'s store shares only the Applications this way and the strings of its children's identities
(``text``); its children are packed (``agent/kube/packed.py``), and the parts decoded from one are
plain dicts and lists that every reader shares until they are shed: readers must not change them
either.
"""

from __future__ import annotations

import copy
import sys
import threading


def _refuse(self, *args, **kwargs):
    raise TypeError(f"{type(self).__name__} is a shared part of live objects (agent.kube.share): "
                    "copy it (dict(x), list(x) or copy.deepcopy(x)) before changing it")


class FrozenDict(dict):
    """A mapping shared by several live objects: a ``dict`` that refuses every change."""

    __slots__ = ()
    __setitem__ = __delitem__ = setdefault = pop = popitem = update = clear = __ior__ = _refuse
    __hash__ = object.__hash__  # by identity: the memo's keys are made of canonical parts

    def __copy__(self) -> dict:
        return dict(self)

    def __deepcopy__(self, memo) -> dict:
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}

    def __reduce__(self):
        return dict, (dict(self),)


class FrozenList(list):
    """A list shared by several live objects: a ``list`` that refuses every change."""

    __slots__ = ()
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = \
        __iadd__ = __imul__ = _refuse
    __hash__ = object.__hash__  # by identity, as FrozenDict's

    def __copy__(self) -> list:
        return list(self)

    def __deepcopy__(self, memo) -> list:
        return [copy.deepcopy(value, memo) for value in self]

    def __reduce__(self):
        return list, (list(self),)


class Memo:
    """The canonical parts seen so far; keep one for a pass (or one response) and drop it after.

    ``share(obj)`` returns an object equal to ``obj`` (a JSON value: dict, list, str, int, float,
    bool, None) built from canonical parts: an equal string, mapping or list met before is
    returned instead of a new one. ``obj`` itself is not changed and should not be used after.
    Memory: one memo entry (about 80 bytes) per distinct part. Most parts are one object's own
    (its uid, its name's labels), so each time the memo has doubled, ``settle`` forgets the
    parts that at most one object still uses: sharing never depends on the memo remembering.
    """

    __slots__ = ("_parts", "_settle_at", "_lock")

    def __init__(self):
        self._parts: dict = {}
        self._settle_at = SETTLE_AT_LEAST
        # the parallel writes of a pass share what they applied through one memo: one thread at
        # a time, since ``settle`` walks the parts another thread would be adding to
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._parts)

    def settle(self) -> None:
        """Forget the parts that no more than one object uses now: the parts whose reference
        count is at most one above what the memo and this loop hold (``_HELD``), unless a part
        kept holds them (a part is found again by its parts' identities)."""
        with self._lock:
            self._settle()

    def _settle(self) -> None:
        kept = {}
        for key, value in self._parts.items():
            if sys.getrefcount(value) > _HELD[key is value] + 1:
                kept[key] = value
        keys = {id(value): key for key, value in self._parts.items() if type(value) in _FROZEN}
        stack = [value for value in kept.values() if type(value) in _FROZEN]
        while stack:
            part = stack.pop()
            for child in part.values() if type(part) is FrozenDict else part:
                key = keys.get(id(child)) if type(child) in _FROZEN else None
                if key is not None and key not in kept:
                    kept[key] = child
                    stack.append(child)
        self._parts = kept
        self._settle_at = max(SETTLE_AT_LEAST, 2 * len(kept))

    def text(self, value):
        """The memo's copy of ``value`` when it is a string met before (else ``value``, now
        remembered); any other value as it is."""
        if type(value) is not str:
            return value
        with self._lock:
            return self._parts.setdefault(value, value)

    def share(self, obj):
        """``obj`` with its parts shared (see the class); a top-level mapping or list stays a
        plain, changeable ``dict`` or ``list`` of shared parts. Safe to call from several
        threads (one at a time inside)."""
        with self._lock:
            return self._share(obj)

    def share_over(self, obj: dict, old: dict | None) -> dict:
        """``share(obj)`` of an object that replaces ``old`` (the same object at an older
        resourceVersion; None: ``share``): each top-level value and each ``metadata`` value
        equal to ``old``'s (``equal``) is ``old``'s own, the others are shared as ``share``
        shares them. Why: after a status sweep the watches replace every Application while the
        pass still holds the ones it read; most of each is unchanged, and the memo forgets what
        only one object uses (``settle``: an Application's own annotations, its uid), so the
        new object was a whole second copy (issue 48). Thread-safe as ``share``."""
        if not old:
            return self.share(obj)
        with self._lock:
            if len(self._parts) > self._settle_at:
                self._settle()
            return {self._parts.setdefault(key, key): self._over(key, value, old.get(key, _MISSING))
                    for key, value in obj.items()}

    def _over(self, key, value, was):
        """``value`` of top-level ``key`` shared over ``was``, the replaced object's (``share_over``)."""
        if key == "metadata" and type(value) is dict and isinstance(was, dict):
            text = self._parts.setdefault
            return FrozenDict({text(k, k): w if (w := was.get(k, _MISSING)) is not _MISSING and equal(w, v)
                               else self._value(v) for k, v in value.items()})
        if was is not _MISSING and equal(was, value):
            return was
        return self._value(value)

    def _value(self, value):
        """``value`` shared as a part of an object is (``_share``'s values)."""
        return value if type(value) in _ATOMS else self._part(value)

    def _share(self, obj):
        if len(self._parts) > self._settle_at:
            self._settle()
        if isinstance(obj, dict):
            text, part = self._parts.setdefault, self._part
            return {text(k, k): v if (t := type(v)) in _ATOMS else text(v, v) if t is str else part(v)
                    for k, v in obj.items()}
        if isinstance(obj, list):
            return [self._part(value) for value in obj]
        return self._part(obj)

    def _part(self, value):
        kind = type(value)
        if kind is str:
            return self._parts.setdefault(value, value)
        part_of = self._part
        if kind is dict:
            text = self._parts.setdefault
            part = FrozenDict({text(k, k): v if (t := type(v)) in _ATOMS else text(v, v) if t is str else part_of(v)
                               for k, v in value.items()})
            # its parts are canonical already: a part is known by its keys, its scalars with their
            # types, and the identities of its parts (FrozenDict and FrozenList hash by identity)
            key = hash((FrozenDict, *part.items(), *map(type, part.values())))
        elif kind is list:
            text = self._parts.setdefault
            part = FrozenList([v if (t := type(v)) in _ATOMS else text(v, v) if t is str else part_of(v) for v in value])
            key = hash((FrozenList, *part, *map(type, part)))
        else:  # int, float, bool, None, or a part shared already: immutable
            return value
        known = self._parts.setdefault(key, part)
        # two different parts can share a hash: then this one is simply not shared
        return known if known is part or _same(known, part) else part


SETTLE_AT_LEAST = 50_000  # memo entries before the first ``settle``


def _held() -> dict[bool, int]:
    """The references to a memo entry that no object uses, as ``settle``'s loop counts them, for
    a string (its own key: True) and for a part (False). Measured on this interpreter, since
    how many references a dict and its loop hold differs between Python versions."""
    text, part = "".join(("share", ".", "probe")), FrozenDict()  # new objects, not constants
    parts, held = {text: text, 0: part}, {}
    for key, value in parts.items():
        held[key is value] = sys.getrefcount(value) - 1  # not counting ``text`` or ``part`` here
    return held


_HELD = _held()
_FROZEN = (FrozenDict, FrozenList)


_ATOMS = frozenset({int, float, bool, type(None)})  # JSON scalars other than strings: kept as they are


_MISSING = object()
_MAPPINGS = frozenset({dict, FrozenDict})
_LISTS = frozenset({list, FrozenList})


def equal(a, b) -> bool:
    """True when the JSON values ``a`` and ``b`` are the same JSON: mappings with the same keys in
    the same order, lists of the same length, equal scalars of the same type (``1``, ``1.0`` and
    ``True`` are equal in Python, not in JSON); a ``FrozenDict`` or ``FrozenList`` is its plain
    counterpart."""
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta in _MAPPINGS and tb in _MAPPINGS:
        return len(a) == len(b) and tuple(a) == tuple(b) and all(equal(v, b[k]) for k, v in a.items())
    if ta in _LISTS and tb in _LISTS:
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    return ta is tb and a == b


def _same(known, part) -> bool:
    """True when ``part`` has exactly ``known``'s content: the same type, keys in the same
    order, equal values of the same types (``1``, ``1.0`` and ``True`` are equal in Python but
    not in JSON), and parts that are equal (the same objects, when canonical)."""
    if type(known) is not type(part) or known != part:
        return False
    if type(part) is FrozenDict:
        return tuple(known) == tuple(part) and tuple(map(type, known.values())) == tuple(map(type, part.values()))
    return tuple(map(type, known)) == tuple(map(type, part))
