"""Bounded parallel writes of a pass, with the serial pass's results and order.

Why a module of its own: a pass's writes (apply, prune, status) are independent within one
phase, and a serial loop waits one round trip per object (issue 11: 7,010 requests one after
another at 1,000 Applications). Here each phase's writes run in a ``concurrent.futures``
thread pool of ``kube.concurrency`` workers, and what they did is replayed into the pass's
report in the order the serial loop would have produced it, whatever order they finished in.

How the guarantees of the serial pass are kept:

* Phases stay in order (``sync.reconcile`` waits for one stage before starting the next): namespaces
  and Applications, then their children (which need the Application's uid), then prunes of
  children, then prunes of Applications, then status. Nothing is pruned before the whole
  desired set is known and valid, because pruning is a later phase.
* One failure never stops the others: each task's ``ApiError`` is its own result.
* An unreachable API server (``ApiError`` status 0, or any unexpected exception) stops the pass:
  tasks not yet started are skipped, and the error is raised when the replay reaches it, so
  the report holds exactly what the serial pass would have held up to that object, and no
  later phase (prune, status) runs.
* Each task records into its own ``Scratch`` (report additions, failure entries), replayed in
  input order, so a pass's report and its failure messages are deterministic.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType
from typing import Any, Callable, Iterable, Iterator, Mapping, TypeVar

from agent.api.objects import Obj
from agent.engine.report import Report
from agent.kube.cluster import ApiError, Cluster

T = TypeVar("T")
R = TypeVar("R")
DEFAULT_CONCURRENCY = 4  # see docs/operations.md, Performance: measured on the local control plane
MAX_CONCURRENCY = 64
WINDOW_PER_WORKER = 64  # tasks handed to the pool at once, per worker (see ``ordered``)
_CONTAINERS: dict[str, Callable[[], Any]] = {
    "added": list, "failed": set, "notes": list, "failures": dict, "reasons": dict, "notices": list,
    "readiness": dict, "attributed": dict, "replaced": set}
"""A ``Scratch``'s containers: name -> the type of an empty one. ``added``: (args, kwargs) of each
``add``; ``notices``: ``news.Notice``; the others as the ``Report`` fields of their names."""
_NO_KWARGS: Mapping[str, Any] = MappingProxyType({})  # one for every add without keywords


class Scratch:
    """What one task recorded, in the shape of the pass's ``Report`` (``add``, ``failed``,
    ``notes``, ``notices``, ``readiness``, ``attributed``, ``replaced``) plus its own ``failures``
    and ``reasons`` (Application key -> message or condition reason), to be replayed in order by
    ``ordered``.

    Each container is made at its first use (``__getattr__``), and the object has no
    ``__dict__``: ``ordered`` keeps every non-empty scratch of a phase until its replay, one per
    object (30,000 on ``run``'s first pass at 10,000 Applications), and nine containers made at
    once cost about 1 KiB a scratch (issue 48)."""

    __slots__ = tuple(_CONTAINERS)

    def __getattr__(self, name: str) -> Any:
        """The container ``name`` (one of ``_CONTAINERS``), made empty now; AttributeError for
        any other name (what a ``Report`` has and a task may not record)."""
        make = _CONTAINERS.get(name)
        if make is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = make()
        setattr(self, name, value)
        return value

    def _made(self, name: str) -> Any:
        """The container ``name`` when a task used it, else None (none is made)."""
        try:
            return object.__getattribute__(self, name)
        except AttributeError:
            return None

    def add(self, *args: Any, **kwargs: Any) -> None:
        self.added.append((args, kwargs or _NO_KWARGS))

    def __bool__(self) -> bool:
        """False when nothing was recorded (then there is nothing to replay)."""
        return any(self._made(name) for name in _CONTAINERS)

    def replay(self, report: Report, failures: dict[str, str] | None = None,
               reasons: dict[str, str] | None = None) -> None:
        """Apply what was recorded to the real ``report`` and dicts, in recording order."""
        made = self._made
        for args, kwargs in made("added") or ():
            report.add(*args, **kwargs)
        if found := made("failed"):
            report.failed |= found
        if found := made("notes"):
            report.notes += found
        if found := made("notices"):
            report.notices += found
        if found := made("readiness"):
            report.readiness.update(found)
        if found := made("attributed"):
            report.attributed.update(found)
        if found := made("replaced"):
            report.replaced |= found
        if failures is not None and (found := made("failures")):
            failures.update(found)
        if reasons is not None and (found := made("reasons")):
            reasons.update(found)


_SKIPPED = object()


def _stops(err: BaseException) -> bool:
    """True for what stops a whole pass: no answer from the API server, or a bug."""
    return not isinstance(err, ApiError) or err.status == 0


def ordered(kube: object, items: Iterable[T], task: Callable[[T, Scratch], R], report: Report,
            failures: dict[str, str] | None = None, reasons: dict[str, str] | None = None,
            inline: Callable[[T], bool] | None = None) -> Iterator[tuple[T, R]]:
    """Run ``task(item, scratch)`` for every item, at most ``kube.concurrency`` at a time
    (1 when ``kube`` has no such attribute), and yield ``(item, result)`` in input order,
    each after its scratch was replayed into ``report`` (and ``failures``/``reasons``).

    All tasks finish before the first yield. A task that raised an exception that stops the
    pass (see ``_stops``) makes the tasks not yet started skip; the exception is re-raised
    when the replay reaches it. Any other exception a task raised is re-raised at its place
    too (tasks are expected to turn per-object ApiErrors into results, as ``appapply.converge``
    does). ``inline(item)`` True: the task sends no request (e.g. an unchanged step), so it runs
    in the calling thread, without the pool's overhead (its place in the
    replay is unchanged). They run before the pool's tasks."""
    items = list(items)
    stop = threading.Event()

    def run(item: T) -> tuple[Any, Scratch | None, BaseException | None]:
        if stop.is_set():
            return _SKIPPED, None, None
        scratch = Scratch()
        try:
            # an empty scratch is not kept: a phase may hold 20,000 results until the replay
            return task(item, scratch), scratch or None, None
        except BaseException as err:  # noqa: BLE001 (re-raised in order below)
            if _stops(err):
                stop.set()
            return None, scratch, err

    results: list[Any] = [None] * len(items)
    pooled: list[int] = []
    for i, item in enumerate(items):  # inline ones first: they send nothing, so nothing skips them
        if inline is not None and inline(item):
            results[i] = run(item)
        else:
            pooled.append(i)
    workers = max(1, min(int(getattr(kube, "concurrency", 1) or 1), len(pooled) or 1))
    if workers == 1:
        for i in pooled:
            results[i] = run(items[i])
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="write") as pool:
            # in windows: a Future per task at once would be 20,000 of them (a lock and a
            # condition each) at 10,000 Applications; a window keeps the workers busy all the same
            window = workers * WINDOW_PER_WORKER
            for start in range(0, len(pooled), window):
                part = pooled[start:start + window]
                for i, result in zip(part, pool.map(run, [items[i] for i in part])):
                    results[i] = result
    for item, (value, scratch, err) in zip(items, results):
        if value is _SKIPPED:  # skipped after a stopping error: raise that one (pool tasks start in order,
            raise next(e for _, _, e in results if e is not None and _stops(e))  # so it is normally raised first)
        if scratch is not None:
            scratch.replay(report, failures, reasons)
        if err is not None:
            raise err
        yield item, value


class Namespaces:
    """Creates each missing namespace once, however many parallel tasks need it: ``ensure(name)``
    creates it unless it is in ``existing`` (names the pass listed) or was created already.
    A failed creation raises (``ApiError``) to that caller and is tried again by the next, as
    the serial pass did."""

    def __init__(self, kube: Cluster, existing: set[str], make: Callable[[str], Obj]) -> None:
        self._kube, self._existing, self._make = kube, existing, make
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def ensure(self, name: str) -> None:
        if name in self._existing:
            return
        with self._guard:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            if name not in self._existing:
                self._kube.create(self._make(name))
                self._existing.add(name)
