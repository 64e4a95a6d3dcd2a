"""A watched object kept small: a decoded head and the rest compressed (issue 48).

Why: ``run`` keeps every watched object (at 10,000 Applications, 30,000 of them and more with the
other child kinds) for its passes, and as decoded dicts they were most of its memory (357 MiB at
10,000). A pass reads the metadata of every child (who it is, its owner, its resourceVersion,
its labels and annotations) and the facts it derived the last time it saw that version
(``steady.Steady.fact``). The rest (spec, status, ...) is read only for the children of the
Applications a pass acts on. The store keeps Applications decoded (``livestore.UNPACKED``):
every pass reads their status.

So a ``Packed`` object is a ``dict`` that holds its ``apiVersion``, ``kind`` and ``metadata``
decoded (``TOP``; the metadata's equal parts shared, frozen), and keeps the rest as JSON
compressed with zlib against a preset dictionary of its kind (the first object of the kind:
similar objects then take a few hundred bytes). Reading any other key decodes the rest
and keeps it decoded (``load``) until ``Loaded`` sheds it again: at most ``Loaded.limit``
objects are decoded at once, the least recently loaded shed first. A reader holding a part it
read (``obj["spec"]``) keeps a valid part: the decoded rest is never changed, only dropped.

Reads behave as the plain dict's would (``[]``, ``get``, ``in``, iteration, ``items``, ``==``,
``json.dumps``, ``copy.deepcopy``: a plain dict). A ``Packed`` object is shared by every reader
of the store, so it refuses changes, as ``share.FrozenDict`` does. Thread-safe: a shed racing a
read makes the read decode again, never see a half object (``_loaded`` is cleared before the keys
go and set after they come).
"""

from __future__ import annotations

import copy
import json
import threading
import zlib
from collections import OrderedDict

from agent.api.labels import AGENT_NAME
from agent.kube.share import FrozenDict, Memo, _refuse

TOP = ("apiVersion", "kind", "metadata")
"""What a ``Packed`` object holds decoded: what the passes read of every object."""
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


class Loaded:
    """The ``Packed`` objects whose rest is decoded, at most ``limit``: loading one more sheds
    the one loaded longest ago."""

    def __init__(self, limit: int = 1024):
        self.limit = limit
        self._lock = threading.Lock()
        self._order: OrderedDict[int, Packed] = OrderedDict()

    def add(self, obj: "Packed") -> None:
        with self._lock:
            self._order[id(obj)] = obj
            self._order.move_to_end(id(obj))
            shed = [self._order.popitem(last=False)[1] for _ in range(len(self._order) - self.limit)]
        for old in shed:
            old.shed()

    def drop(self, obj: "Packed") -> None:
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


class Packed(_ReadsWhole, dict):
    """A watched object: ``TOP`` decoded, the rest packed (module docstring). ``pack`` makes one."""

    __slots__ = ("_blob", "_codec", "_loaded", "_pool", "__weakref__")
    __setitem__ = __delitem__ = pop = popitem = update = clear = __ior__ = _refuse
    __hash__ = object.__hash__

    def setdefault(self, key, default=None):
        """The value of ``key`` when it has one (no change: what a list's reader does to every
        item); refused otherwise."""
        if key in self:
            return self[key]
        return _refuse(self)

    def load(self) -> dict:
        """The decoded rest (every key but ``apiVersion`` and ``kind``; ``metadata`` whole), kept
        in this object until shed. Never changed after: callers only read it."""
        rest = self._codec.decode(self._blob)
        for key, value in rest.items():
            dict.__setitem__(self, key, value)
        if not self._loaded:
            self._loaded = True
            self._pool.add(self)
        return rest

    def shed(self) -> None:
        """Drop the decoded rest (``Loaded`` calls it)."""
        self._loaded = False  # first: a read racing this decodes again
        for key in [k for k in dict.keys(self) if k not in TOP]:
            dict.pop(self, key, None)

    def __missing__(self, key):
        if key in TOP or self._loaded:
            raise KeyError(key)
        return self.load()[key]

    def get(self, key, default=None):
        value = dict.get(self, key, _MISS)
        if value is not _MISS:
            return value
        if key in TOP or self._loaded:
            return default
        return self.load().get(key, default)

    def __contains__(self, key):
        if dict.__contains__(self, key):
            return True
        if key in TOP or self._loaded:
            return False
        return key in self.load()

    def full(self) -> dict:
        """A plain dict of the whole object (its parts as they are: ``metadata`` frozen)."""
        rest = self.load()
        return {"apiVersion": dict.get(self, "apiVersion"), "kind": dict.get(self, "kind"),
                "metadata": dict.__getitem__(self, "metadata"), **rest}

    whole = full

    def __bool__(self):
        return True  # never empty (it has a kind and metadata): ``obj or {}`` decodes nothing


class Deferred(_ReadsWhole, FrozenDict):
    """A shared, unchangeable mapping kept compressed until read: the ``fieldsV1`` trie of the
    agent's own apply entry in a packed object's managedFields (``pack``). Why: that trie names
    what the agent rendered (a Deployment's container is keyed by its Application's name), so
    no two objects share it; decoded, it cost about 0.7 KiB per Deployment (3,000 listed: 6.9 ->
    4.9 MB traced, issue 48). A pass reads it only for the Applications it plans (``fields.dropped``, ``release``).

    Every read decodes it again into a new plain ``dict`` (a reader may keep or change that).
    Reads behave as a plain dict's would, as ``Packed``'s do. The dict itself holds one
    placeholder key (``_HELD``), so that C code asking a dict's size directly (the JSON
    encoder's empty-mapping shortcut) never takes it for ``{}``; no read shows it."""

    __slots__ = ("_blob", "_codec")

    def value(self) -> dict:
        """The mapping, decoded (a new ``dict`` each time)."""
        return self._codec.decode(self._blob)

    def __getitem__(self, key):
        return self.value()[key]

    def get(self, key, default=None):
        return self.value().get(key, default)

    def __contains__(self, key):
        return key in self.value()

    def __bool__(self):
        return True  # only a non-empty mapping is deferred: ``trie or {}`` decodes nothing

    __hash__ = FrozenDict.__hash__
    whole = value


_HELD = "\0deferred"  # the placeholder key of a Deferred (no FieldsV1 key starts with NUL)


def defer(value: dict, codec: Codec) -> Deferred:
    """``value`` (a non-empty JSON mapping) as a ``Deferred`` mapping compressed by ``codec``."""
    out = Deferred()
    dict.__setitem__(out, _HELD, None)
    out._blob, out._codec = codec.encode(value), codec
    return out


def _deferring(meta: dict, tries: Codec) -> dict:
    """``meta`` with the ``fieldsV1`` of the agent's own apply entries deferred (``Deferred``)."""
    entries = meta.get("managedFields")
    if not isinstance(entries, list):
        return meta
    out = []
    for entry in entries:
        trie = entry.get("fieldsV1") if isinstance(entry, dict) else None
        if trie and isinstance(trie, dict) and entry.get("manager") == AGENT_NAME and entry.get("operation") == "Apply":
            entry = {**entry, "fieldsV1": defer(trie, tries)}
        out.append(entry)
    return {**meta, "managedFields": out}


def pack(obj: dict, codec: Codec, pool: Loaded, memo: Memo, tries: Codec | None = None) -> Packed:
    """``obj`` (a live object with apiVersion, kind and metadata, managedFields compacted) as a
    ``Packed`` object; its metadata's equal parts shared through ``memo`` (``share``: a Service
    shares its labels and ownerReferences with its Deployment), frozen. With ``tries``, the
    ``fieldsV1`` of the agent's own apply entries are kept compressed by it (``Deferred``)."""
    rest = {k: v for k, v in obj.items() if k not in TOP}
    meta = obj.get("metadata") or {}
    if tries is not None:
        meta = _deferring(meta, tries)
    packed = Packed()
    dict.__setitem__(packed, "apiVersion", obj.get("apiVersion"))
    dict.__setitem__(packed, "kind", obj.get("kind"))
    dict.__setitem__(packed, "metadata", memo.share({"metadata": meta})["metadata"])
    packed._blob, packed._codec, packed._loaded, packed._pool = codec.encode(rest), codec, False, pool
    return packed
