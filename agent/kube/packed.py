"""A watched object kept small: a few decoded fields and the rest compressed (issue 48).

Why: ``run`` keeps every watched object (at 10,000 Applications, 30,000 of them and more with the
other child kinds) for its passes, and as decoded dicts they were most of its memory (357 MiB at
10,000). What a pass reads of every child is small: who it is, its resourceVersion, and the facts
it derived the last time it saw that version (``steady.Steady.fact``: its owner, from labels and
ownerReferences). The rest is read only for the Applications a pass acts on, and by the status
sweep a batch at a time: its children's health (``generation``, ``deletionTimestamp``, spec and
status). The store keeps Applications decoded (``livestore.UNPACKED``): every pass reads
their status.

So a ``Packed`` object is a ``dict`` that holds its ``apiVersion``, ``kind`` and ``metadata``
decoded (``TOP``), and keeps the rest as JSON compressed with zlib against a preset dictionary of
its kind (the first object of the kind: similar objects then take a few hundred bytes). Its
``metadata`` is packed the same way (``Head``): ``HEAD_KEYS`` decoded, the rest (labels,
annotations, ownerReferences, managedFields, uid) compressed by a codec of its own. Reading any
other key decodes the rest and keeps it decoded (``load``) until ``Loaded`` sheds it again: at
most ``Loaded.limit`` rests are decoded at once, the least recently loaded shed first. Asking for
a key the object lacks decodes nothing (``_shape``). A reader holding a part it read
(``obj["spec"]``) keeps a valid part: the decoded rest is never changed, only dropped.

Reads behave as the plain dict's would (``[]``, ``get``, ``in``, iteration, ``items``, ``==``,
``json.dumps``, ``copy.deepcopy``: a plain dict). A ``Packed`` object is shared by every reader
of the store, so it refuses changes, as ``share.FrozenDict`` does. Thread-safe: a shed racing a
read makes the read decode again, never see a half object: whether a key is in the rest is told by
the object's shape, never by which keys are decoded at that moment.
"""

from __future__ import annotations

import copy
import json
import threading
import zlib
from collections import OrderedDict

from agent.kube.share import Memo, _refuse

TOP = ("apiVersion", "kind", "metadata")
"""What a ``Packed`` object holds decoded: what the passes read of every object."""
HEAD_KEYS = ("name", "namespace", "resourceVersion", "generation", "deletionTimestamp")
"""What a packed object's metadata (``Head``) holds decoded: its identity and version, read for every
object by every pass, and what its kind's health reads (``health.VIEW_METADATA``), read for every
child by a status sweep. The rest of the metadata is read for every object whose resourceVersion
moved (``triggers.fingerprint``; every object on ``run``'s first pass), and otherwise only where
the pass acts."""
_NAMES = ("name", "namespace")
_SHAPES: dict[tuple[tuple, frozenset], tuple[tuple, frozenset]] = {}
_MISS = object()


class Codec:
    """The compression of one kind: raw deflate against a preset dictionary, the JSON of the
    kind's first object (set once, read only after)."""

    LEVEL = 6

    def __init__(self):
        self.zdict: bytes | None = None
        self.loads = 0  # bodies decoded (a counter for tests and the bench)

    def encode(self, rest: dict) -> bytes:
        text = json.dumps(rest, separators=(",", ":")).encode()
        if self.zdict is None:
            self.zdict = text[-32768:]
        packer = zlib.compressobj(self.LEVEL, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, self.zdict)
        return packer.compress(text) + packer.flush()

    def decode(self, blob: bytes) -> dict:
        self.loads += 1
        assert self.zdict is not None
        return json.loads(zlib.decompressobj(-15, zdict=self.zdict).decompress(blob))


LOADED_LIMIT = 512
"""Rests a store keeps decoded at once (``Loaded``), objects' and metadata's (``Head``) alike. Enough
for the children of a batch of a status sweep (``statuses.STATUS_BATCH``), which reads each child's
rest in three stages (their metadata's rest it does not read); a decoded object's rest costs about
4 KiB, and the pool stays full between passes (1,024: 4.2 MB of a sweep's peak, issue 48)."""


class Loaded:
    """The objects (``Packed``, ``Head``) whose rest is decoded, at most ``limit``: loading one
    more sheds the one loaded longest ago. Loading one again counts it as loaded last."""

    def __init__(self, limit: int = LOADED_LIMIT):
        self.limit = limit
        self._lock = threading.Lock()
        self._order: OrderedDict[int, _Lazy] = OrderedDict()

    def add(self, obj: "_Lazy") -> None:
        with self._lock:
            self._order[id(obj)] = obj
            self._order.move_to_end(id(obj))
            shed = [self._order.popitem(last=False)[1] for _ in range(len(self._order) - self.limit)]
        for old in shed:
            old.shed()

    def drop(self, obj: "_Lazy") -> None:
        with self._lock:
            self._order.pop(id(obj), None)

    def __len__(self) -> int:
        return len(self._order)


class _ReadsWhole:
    """Reads of a ``dict`` subclass that keeps (part of) its content elsewhere, answered from
    ``whole()``, a plain dict of all of it: what a plain dict's would be. Why: C code reads a
    dict's own storage only for an exact ``dict`` or when ``__iter__`` is the dict's; every
    other read (``dict(x)``, ``{**x}``, ``json.dumps``, ``==``, ``copy``) comes through these."""

    __slots__ = ()

    def whole(self) -> dict:
        raise NotImplementedError

    def keys(self):
        return self.whole().keys()

    def items(self):
        return self.whole().items()

    def values(self):
        return self.whole().values()

    def __iter__(self):
        return iter(self.whole())

    def __len__(self):
        return len(self.whole())

    def __eq__(self, other):
        return self.whole() == other

    def __ne__(self, other):
        return not self == other

    def __or__(self, other):
        return self.whole() | other

    def __ror__(self, other):
        return dict(other) | self.whole()

    def __repr__(self):
        return repr(self.whole())

    def copy(self) -> dict:
        return self.whole()

    def __copy__(self) -> dict:
        return self.whole()

    def __deepcopy__(self, memo) -> dict:
        return copy.deepcopy(self.whole(), memo)

    def __reduce__(self):
        return dict, (self.whole(),)


class _Lazy(_ReadsWhole, dict):
    """A mapping that holds a few keys decoded (its head: ``TOP``, ``HEAD_KEYS``) and the rest
    compressed (``_blob``, decoded by ``_codec`` on the first read of another key, kept until
    ``Loaded`` sheds it).
    ``_shape``: (every key in the original order, the rest's keys), one copy per distinct shape
    (``_shaped``): asking for a key it lacks decodes nothing, and a whole copy keeps the order.
    ``_rest``: the decoded rest while loaded, else None; never put in the dict itself. Why: a
    dict's table grows to hold the rest and never shrinks when keys are removed, so each object
    loaded once (every one, on ``run``'s first pass) kept a table for all its keys: about 88
    bytes more for each of 60,000 objects and metadata at 10,000 Applications (issue 48)."""

    __slots__ = ("_blob", "_codec", "_pool", "_shape", "_rest", "__weakref__")
    __setitem__ = __delitem__ = pop = popitem = update = clear = __ior__ = _refuse
    __hash__ = object.__hash__

    def setdefault(self, key, default=None):
        """The value of ``key`` when it has one (no change: what a list's reader does to every
        item); refused otherwise."""
        if key in self:
            return self[key]
        return _refuse(self)

    def load(self) -> dict:
        """The decoded rest (every key but the head's), held in ``_rest`` until shed (and the
        object counted as loaded last). Never changed after: callers only read it (its parts are
        plain dicts and lists, not frozen)."""
        rest = self._codec.decode(self._blob)
        self._rest = rest
        self._pool.add(self)
        return rest

    def shed(self) -> None:
        """Drop the decoded rest (``Loaded`` calls it, from any thread). A read racing it decodes
        again: whether a key is in the rest is told by ``_shape``, never by what is decoded now."""
        self._rest = None

    def _loaded(self) -> dict:
        """The decoded rest: the one held, else ``load()``'s (one read of ``_rest``: a shed
        racing it leaves the reader a whole rest)."""
        rest = self._rest
        return rest if rest is not None else self.load()

    def __missing__(self, key):
        if key not in self._shape[1]:
            raise KeyError(key)
        return self._loaded()[key]

    def get(self, key, default=None):
        value = dict.get(self, key, _MISS)
        if value is not _MISS:
            return value
        if key not in self._shape[1]:
            return default
        return self._loaded().get(key, default)

    def __contains__(self, key):
        return dict.__contains__(self, key) or key in self._shape[1]

    def full(self) -> dict:
        """A plain dict of the whole mapping, in its original order (the head's values as they
        are: a ``Packed`` object's metadata stays a ``Head``)."""
        rest = self.load()
        return {k: rest[k] if k in rest else dict.__getitem__(self, k) for k in self._shape[0]}

    whole = full

    def __bool__(self):
        return True  # never empty (it has a head): ``obj or {}`` decodes nothing


class Packed(_Lazy):
    """A watched object: ``TOP`` decoded, the rest packed (module docstring). ``pack`` makes one."""

    __slots__ = ()


class Head(_Lazy):
    """A packed object's metadata: ``HEAD_KEYS`` decoded, the rest (labels, annotations,
    ownerReferences, managedFields, uid, ...) packed until read."""

    __slots__ = ()


def _shaped(order: tuple, rest: dict) -> tuple[tuple, frozenset]:
    """(``order``, the keys of ``rest``): one copy per distinct shape (most objects of a kind share
    one; the keys are the API's, so shapes are few)."""
    shape = (order, frozenset(rest))
    return _SHAPES.setdefault(shape, shape)


def _lazy(cls, whole: dict, head: dict, codec: Codec, pool: Loaded):
    """A ``cls`` (``Packed``, ``Head``) of ``whole``: ``head`` decoded, the rest compressed by ``codec``."""
    out = cls()
    for key, value in head.items():
        dict.__setitem__(out, key, value)
    rest = {k: v for k, v in whole.items() if k not in head}
    out._blob, out._codec, out._pool, out._rest = codec.encode(rest), codec, pool, None
    out._shape = _shaped(tuple(whole), rest)
    return out


def pack(obj: dict, codec: Codec, pool: Loaded, memo: Memo, heads: Codec) -> Packed:
    """``obj`` (a live object with apiVersion, kind and metadata, managedFields compacted) as a
    ``Packed`` object, its rest compressed by ``codec``; its metadata a ``Head`` whose rest
    ``heads`` compresses (a codec of its own: metadata and spec make different dictionaries). The
    head's name and namespace are ``memo``'s strings (an Application's name is its children's
    too; a resourceVersion is one object's own)."""
    meta = obj.get("metadata") or {}
    head = {k: memo.text(meta[k]) if k in _NAMES else meta[k] for k in HEAD_KEYS if k in meta}
    metadata = _lazy(Head, meta, head, heads, pool)
    top = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": metadata}
    return _lazy(Packed, {**top, **obj}, top, codec, pool)
