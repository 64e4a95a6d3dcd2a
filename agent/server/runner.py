"""``python -m agent run``: passes on a schedule, between them on cluster changes, one at a time.

APScheduler drives the interval pass (``max_instances=1`` and ``coalesce``: a pass that overruns
delays the next instead of stacking). Watches on Applications and the agent's children trigger
an extra pass within about a second when something changes, using the last fetched commit
(no Git traffic); they are never the only trigger. A sync-now request (the annotation
``heumsi.github.io/reconcile-requested-at`` changed to a token not yet handled, see
``sync_now``) asks for a pass that does ask Git, coalesced like a webhook's. When an Application
is backing off (``backoff``) and its retry comes before the next interval pass, a one-off date
job runs a pass then. With leader election, only the replica holding the Lease runs passes; a
replica that loses the lease stops. A push webhook a standby forwarded through the Lease
(``kube.election``) asks the leader for a pass as its own webhook does (trigger
``forwarded-webhook``).

A watch event starts a pass only when it is news (``triggers``): the agent's own applies, status
writes and prunes, and the watches' first lists (read before the first pass starts), never do,
so after start-up one pass runs until something changes. A sync-now token asks for one pass.
"""

from __future__ import annotations

import datetime
import gc
import logging
import threading
import time

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.background import BackgroundScheduler

from agent.api.labels import AGENT_NAME, APPLICATION_LABEL, MANAGED_BY
from agent.common import arenas
from agent.api.schema import GROUP, KIND
from agent.engine import backoff, livestate, readiness, sync, sync_now
from agent.engine.report import Action, Report
from agent.engine.steady import Steady
from agent.kinds import registry
from agent.kube import watch as watches
from agent.kube.client import Kube
from agent.kube.livestore import LiveStore, StoreKube
from agent.server import triggers
from agent.server.endpoints import Health, Metrics
from agent.source import gitproc

log = logging.getLogger("agent.run")
TRIGGER_DEBOUNCE = 0.5  # seconds: cluster changes closer than this share one pass
ONLINE_SPACING = 1.0  # seconds: pushes are served at once, but at most one online pass starts per this long
FIRST_LIST_WAIT = 5.0  # seconds the first pass waits for the watches' first lists once no item arrives
DEFAULT_RELIST_INTERVAL = 600.0  # seconds: each watch lists again this often, bounding any divergence


GC_THRESHOLDS = (700, 10, 1000)
"""The collector's thresholds in ``run`` (``gc.set_threshold``): Python's defaults, but a full
collection after 1,000 collections of the middle generation instead of 10. Why: ``_settle_memory``
freezes what is left after each pass, so the collector's other rule for a full collection (25 %
more long-lived objects than the last one left) held after a few thousand allocations, and a full
collection walked everything the pass had made so far on a push's way to its apply (0.05 to 0.1 s
of 0.4 s at 10,000 Applications, issue 33). Cyclic garbage is still collected: by the young
collections, and in full after every pass."""


def _settle_memory(store: LiveStore | None) -> None:
    """Collect the pass's cyclic garbage, then freeze what is left (``gc.freeze``): the watches'
    store and the memory of the previous pass are hundreds of thousands of long-lived objects, and
    a collection that walked them all took seconds of a pass at 10,000 Applications. Frozen
    objects are still freed when no longer referenced (JSON objects hold no cycles); each
    collection walks only what is new since the last pass. Also after watch events were judged
    and were not news: the objects they brought (the tail of a status sweep) are frozen then,
    not walked by a collection on the next push's way to its apply (issue 33). Before that, the
    store's memo forgets the parts of replaced objects (``LiveStore.settle``); after it, glibc
    hands back the heap that was freed (``arenas.trim``; issue 48)."""
    if store is not None:
        store.settle()
    gc.collect()
    gc.freeze()
    arenas.trim()


class Runner:
    """Runs sync passes for ``opts`` against ``kube``.

    ``interval``/``jitter``: seconds between scheduled passes and the random spread added to
    each. ``metrics``/``health``: updated after every pass. Thread-safe: passes never overlap.
    """

    def __init__(self, kube: Kube, opts: sync.Options, *, interval: float, jitter: float,
                 metrics: Metrics, health: Health, watch: bool = True,
                 retry: backoff.Policy = backoff.Policy(skip=True), notifier=None, cache=None,
                 relist_interval: float | None = DEFAULT_RELIST_INTERVAL):
        self.kube, self.opts, self.retry = kube, opts, retry
        self.relist_interval = relist_interval
        self.store = LiveStore() if watch else None  # what the passes read instead of listing
        self.steady = Steady(versions=self.store.version_after if self.store else None)  # see engine/steady.py
        self.notifier = notifier  # agent.notify.notifier.Notifier: told of each pass, never waited for
        self.cache = cache  # the status page's (``agent.server.cache.Cache``), None without the page
        self.last_pass: dict = {}  # its commit, result, trigger, end (Unix time) and duration
        self.interval, self.jitter = interval, jitter
        self.metrics, self.health = metrics, health
        self.watch_enabled = watch
        self.stopping = threading.Event()
        self.lost_lease = False
        self.last_commit: str | None = None
        self._pass_lock = threading.Lock()
        self._trigger = threading.Event()
        self._request_lock = threading.Lock()
        self._online_requested_at: float | None = None  # monotonic time of the newest webhook request
        self._last_requested: float | None = None  # the same, kept once its pass is under way
        self._online_trigger = "webhook"  # what asked for it, for the pass's log line
        self._last_online_start: float | None = None
        self._events: dict = {}  # identity -> the newest triggers.Sighting not judged yet (see triggers)
        self._relists: list[tuple[str, list]] = []  # (kind, items) of re-lists not judged yet
        self._requested: dict[str, str] = {}  # Application key -> the sync-now token already asked for
        self.known = triggers.Known()  # what the passes read and wrote
        self._first_pass_started = False
        self._first_lists: list[threading.Event] = []
        self._scheduler = BackgroundScheduler(timezone=datetime.timezone.utc)

    # -- leading -------------------------------------------------------------------------------

    def start_leading(self) -> None:
        """Begin syncing: the interval job (first pass now), the watches and their trigger loop."""
        log.info("leading: starting passes every %.0fs", self.interval)
        gc.set_threshold(*GC_THRESHOLDS)
        self.health.leading = True
        self.metrics.leader.set(1)
        self.metrics.source_last_success.labels(source=self.opts.source_id)  # served as 0 until the first success
        if self.watch_enabled:
            selector = f"{MANAGED_BY}={AGENT_NAME}"
            lists = []
            for group, kind, labels in ((GROUP, "Application", None),
                                        *((k.group, k.kind, selector) for k in registry.CHILD_KINDS)):
                listed = threading.Event()
                lists.append(listed)
                self.store.watching(group, kind, labels)
                threading.Thread(target=watches.run, args=(self.kube, group, kind, labels, self._on_event,
                                                           self.stopping, self._listed(listed), self.store,
                                                           self.relist_interval),
                                 name=f"watch-{kind}", daemon=True).start()
            self.store.watching("", "Namespace", None)  # never a trigger: the passes read it only
            threading.Thread(target=watches.run, args=(self.kube, "", "Namespace", None, lambda *_: None,
                                                       self.stopping, None, self.store, self.relist_interval),
                             name="watch-Namespace", daemon=True).start()
            self._first_lists = lists  # the first pass waits for them (_await_first_lists)
            if self.cache is not None:
                self._watch_for_page()
        self._scheduler.add_job(self.scheduled_pass, "interval", id="interval", seconds=self.interval, jitter=self.jitter,
                                max_instances=1, coalesce=True, misfire_grace_time=None,
                                next_run_time=datetime.datetime.now(datetime.timezone.utc))
        self._scheduler.start()
        threading.Thread(target=self._trigger_loop, name="trigger", daemon=True).start()

    def _watch_for_page(self) -> None:
        """The status page's own watches, never a trigger: the Applications' pods (label
        ``heumsi.github.io/application``), and Events, kept only when about an Application, a
        child kind or a Pod and cut to what ``explain`` shows (``cache.slim_event``)."""
        from agent.server.cache import slim_event
        cache = self.cache

        def event(event_type: str, obj: dict | None) -> None:
            kept = obj if event_type == "DELETED" else slim_event(obj)
            if kept is not None:
                cache.event(event_type, kept)

        for kind, labels, on_event, on_list in (
                ("Pod", APPLICATION_LABEL, cache.event, lambda k, items, _first: cache.listed(k, items)),
                ("Event", None, event,
                 lambda k, items, _first: cache.listed(k, [e for e in map(slim_event, items) if e is not None]))):
            threading.Thread(target=watches.run, args=(self.kube, "", kind, labels, on_event, self.stopping, on_list),
                             name=f"watch-{kind}", daemon=True).start()

    def stop_leading(self) -> None:
        """The lease was lost: stop at once (another replica now syncs). Ignored once shutting
        down (the lease was released on purpose)."""
        if self.stopping.is_set():
            return
        log.error("lost the leader lease; stopping so that only the new leader syncs")
        self.health.leading = False
        self.metrics.leader.set(0)
        self.lost_lease = True
        self.stopping.set()

    def _listed(self, done: threading.Event):
        """``on_list`` for a watch: its first list, read before the first pass started, is not news
        (that pass reads after it); a later re-list is judged like events (``Known.relisted``)."""
        def on_list(kind: str, items: list[dict], first: bool) -> None:
            if self.cache is not None:
                self.cache.listed(kind, items)
            for item in items:
                if item.get("kind") == "Application" and sync_now.pending(item):
                    self._on_event("ADDED", item)  # a token set while no agent ran
            if not (first and not self._first_pass_started):
                with self._request_lock:
                    self._relists.append((kind, items))
                    self._trigger.set()
            done.set()
        return on_list

    def _on_event(self, event_type: str, obj: dict | None) -> None:
        if self.cache is not None:
            self.cache.event(event_type, obj)
        if obj and obj.get("kind") == "Application" and event_type in ("ADDED", "MODIFIED") \
                and sync_now.pending(obj):
            key, token = f"{obj['metadata'].get('namespace')}/{obj['metadata'].get('name')}", sync_now.token(obj)
            if self._requested.get(key) != token:  # each token asks once; the pass's own writes
                self._requested[key] = token  # carry it too until its status write records it
                self.request_pass(trigger="reconcile-request")  # sync now: ask Git, too
                return
        seen = triggers.Sighting.of(event_type, obj)  # the newest event of an object is the one to judge
        with self._request_lock:
            self._events[seen.key] = seen
            self._trigger.set()

    def _news(self, events: tuple[dict, list]) -> bool:
        """True when any of ``events`` (sightings by identity, re-lists) is news
        (``triggers.Known``); called with the pass lock held, so the running pass has recorded
        its writes."""
        sightings, relists = events
        if any(self.known.relisted(kind, items) for kind, items in relists):
            return True
        for seen in sightings.values():
            if self.known.judge(seen):
                log.debug("watch: %s %s is news", seen.event_type, seen.key)
                return True
        return False

    def request_pass(self, trigger: str = "webhook") -> bool:
        """Ask for an online pass (one that asks Git) soon, e.g. for a webhook; returns at once.
        Requests coalesce with each other and with watch triggers (one pass serves them all) and
        with the schedule (a pass that started after the request serves it). False when this
        replica does not sync (a standby, or stopping). ``trigger`` names the asker in the
        pass's log line (``webhook``, ``reconcile-request``)."""
        if not self.health.leading or self.stopping.is_set():
            return False
        with self._request_lock:
            self._online_requested_at = self._last_requested = time.monotonic()
            self._online_trigger = trigger
            self._trigger.set()
        return True

    def _trigger_loop(self) -> None:
        while not self.stopping.is_set():
            if self._trigger.wait(timeout=1.0):
                self.stopping.wait(self._settle_time())
                with self._request_lock:
                    self._trigger.clear()
                    requested, self._online_requested_at = self._online_requested_at, None
                    asked_by = self._online_trigger
                    events = (self._events, self._relists)
                    self._events, self._relists = {}, []
                if self.stopping.is_set():
                    continue
                if requested is not None and self.run_pass(offline=False, trigger=asked_by,
                                                           requested_at=requested) is not None:
                    continue  # an online pass covers what the watches saw, too
                if events[0] or events[1]:
                    self.run_pass(offline=True, trigger="watch", only_if=lambda: self._news(events))

    def _settle_time(self) -> float:
        """Seconds to wait before serving what is asked: a push (webhook, sync-now) at once,
        unless an online pass started less than ``ONLINE_SPACING`` ago (then the rest of that:
        a burst of pushes shares one more pass); cluster changes ``TRIGGER_DEBOUNCE``, so
        changes close together share a pass."""
        with self._request_lock:
            online = self._online_requested_at is not None
        if not online:
            return TRIGGER_DEBOUNCE
        since = time.monotonic() - (self._last_online_start or float("-inf"))
        return max(0.0, ONLINE_SPACING - since)

    # -- passes --------------------------------------------------------------------------------

    def scheduled_pass(self) -> None:
        self.run_pass(offline=False, trigger="interval")

    def retry_pass(self) -> None:
        """The pass at an Application's ``nextRetryTime`` (asks Git: a newer commit resets)."""
        self.run_pass(offline=False, trigger="retry")

    def _schedule_retry(self, report: Report) -> None:
        """Run a pass at ``report.retry_at`` when that comes before the next interval pass
        (``backoff.retry_sooner``): one date job, replaced by each pass's newest answer. A pass
        that could not read Git saw no Application and leaves the plan as it was."""
        retry_at = report.retry_at
        if not self._scheduler.running or self.stopping.is_set() or report.fetch_failed:
            return
        job = self._scheduler.get_job("interval")
        if backoff.retry_sooner(retry_at, job.next_run_time if job else None):
            self._scheduler.add_job(self.retry_pass, "date", id="retry", run_date=retry_at, replace_existing=True,
                                    misfire_grace_time=None, coalesce=True, max_instances=1)
            log.info("next retry pass at %s", retry_at.strftime("%H:%M:%S"))
        else:
            try:
                self._scheduler.remove_job("retry")  # the interval pass comes first, or nothing waits
            except JobLookupError:
                pass

    def run_pass(self, offline: bool, trigger: str, requested_at: float | None = None,
                 only_if=None) -> Report | None:
        """One pass, unless stopping or another pass is running (then it waits its turn).
        ``requested_at``: monotonic time of the request; None is returned without a pass when an
        online pass started after it (that pass already saw what the request was about).
        ``only_if()``: asked once the pass's turn has come; False: no pass, None is returned."""
        self._await_first_lists()
        with self._pass_lock:
            if self.stopping.is_set():
                return None
            if requested_at is not None and (self._last_online_start or float("-inf")) >= requested_at:
                return None
            if only_if is not None and not only_if():
                self._warm()  # the Applications those events brought (a status sweep's: 10,000)
                _settle_memory(self.store)  # the events judged since the pass
                return None
            self._first_pass_started = True
            started = time.monotonic()
            self.health.pass_started()  # /healthz fails if it never ends (Health.stuck_after)
            if not offline:
                self._last_online_start = started
            try:
                kube = self.kube if self.store is None else StoreKube(self.kube, self.store)
                # a push webhook says the ref moved: no ``ls-remote`` first to ask whether it did
                report = sync.run(triggers.Recording(kube, self.known, self.cache), self.opts,
                                  known_commit=None if trigger == "webhook" and not offline else self.last_commit,
                                  offline=offline and self.last_commit is not None, retry=self.retry,
                                  on_commit=self.notifier.started if self.notifier else None, steady=self.steady)
            except Exception as err:  # a bug: this pass fails (counted, logged) and the next one runs
                log.exception("the pass stopped on an internal error")
                report = Report()
                report.errors.append(f"internal error: {type(err).__name__}: {err}; the pass stopped, nothing "
                                     "further was changed, pruned or recorded")
            duration = time.monotonic() - started
            if self.notifier is not None:
                self.notifier.finished(report)  # queued: sent by the notifier's own thread
            self._schedule_retry(report)
            if report.commit and not report.fetch_failed:
                self.last_commit = report.commit
            self._observe(report, duration, trigger)  # inside: shutdown waits for the pass's log line
            self._warm()
            _settle_memory(self.store)
            self.last_pass = {"commit": report.commit, "ok": report.ok, "trigger": trigger, "end": time.time(),
                              "seconds": round(duration, 3), "errors": len(report.errors)}
        return report

    def _warm(self) -> None:
        """Derive the facts of the store's Applications now, between passes (``livestate.warm``),
        unless a push is waiting for its pass (``_push_waits``: then that pass derives them).
        Called with the pass lock held. A fault here is a bug: logged, and the next pass derives
        what is missing."""
        apps = self.store.held(KIND) if self.store is not None else []
        try:
            if apps:
                started = time.monotonic()
                n = livestate.warm(self.steady, self.opts, apps, self._push_waits)
                log.debug("facts of %d of %d Applications derived between passes in %.3fs", n, len(apps),
                          time.monotonic() - started)
        except Exception:  # never let it stop the trigger loop that called it
            log.exception("deriving the Applications' facts between passes failed")

    def _push_waits(self) -> bool:
        """True when an online pass was asked for (a webhook, sync-now) after the last one started,
        or the agent is stopping. Not ``_online_requested_at``: the trigger loop takes that before
        it waits for the pass lock."""
        asked, started = self._last_requested, self._last_online_start
        return self.stopping.is_set() or (asked is not None and (started is None or asked > started))

    def _await_first_lists(self) -> None:
        """Before the first pass: wait for the watches' first lists, so that the pass reads after
        them (their items are not news) and from them, not with LISTs of its own (at 10,000
        Applications a list runs for seconds, and the pass's own LIST beside the watch's held
        every Application twice, issue 33). Waits while the lists make progress (items read,
        ``LiveStore.items_read``) and ends once none came for ``FIRST_LIST_WAIT`` seconds (a
        list refused or not answered: the pass lists that kind itself), or at once when stopping."""
        count, quiet_since = -1, 0.0
        for listed in self._first_lists:
            while not listed.is_set() and not self.stopping.is_set():
                now, read = time.monotonic(), self.store.items_read
                if read != count:
                    count, quiet_since = read, now
                elif now - quiet_since >= FIRST_LIST_WAIT:
                    break
                listed.wait(0.1)
        self._first_lists = []

    def _observe(self, report: Report, duration: float, trigger: str) -> None:
        """Metrics, health and the pass's log line. A pass that skipped Applications still
        backing off is a failure, as one that attempted them and failed: they are still failing
        (Flux keeps Ready=False while it retries; Argo CD shows the retrying sync as failed), and
        a success would hide a standing failure from ``gitops_agent_passes_total{result}`` and
        advance the last-synced timestamp. ``/readyz`` counts it like any finished pass."""
        m = self.metrics
        ok = report.ok  # False too when Applications were skipped (``Report.ok``)
        m.pass_duration.observe(duration)
        m.passes.labels(result="success" if ok else "failure").inc()
        for change in report.changes:
            if change.action not in (Action.UNCHANGED, Action.SUSPENDED, Action.SKIPPED):  # left alone: not acted on
                m.objects.labels(kind=change.subject.split("/", 1)[0], action=change.action).inc()
        if report.fetch_seconds is not None:
            m.fetch_duration.observe(report.fetch_seconds)
        if report.fetch_failed:
            m.fetch_failures.inc()
        if report.source_seen:  # fetched (or found unchanged on the remote) and read: Git was seen
            m.source_last_success.labels(source=self.opts.source_id).set(time.time())
        if report.health and not report.stopped:  # a pass that wrote every status (a stopped one: some)
            ready = readiness.count_ready(report.health, report.failing())
            for value, count in (("true", ready), ("false", len(report.health) - ready)):
                m.applications.labels(source=self.opts.source_id, ready=value).set(count)
        if ok:
            m.last_synced.set(time.time())
        self.health.pass_finished()
        counts = report.counts()
        log.log(logging.INFO if ok else logging.WARNING, "pass %s", "succeeded" if ok else "failed",
                extra={"fields": {"event": "pass", "trigger": trigger, "result": "success" if ok else "failure",
                                  "commit": report.commit, "duration_seconds": round(duration, 3), **counts,
                                  "failed_applications": report.failing(), "skipped_applications": report.skipping(),
                                  "failed_files": report.file_errors(),
                                  "errors": report.errors, "notes": report.notes,
                                  "backing_off": [f"{k}: {w.message()}" for k, w in sorted(report.backing_off.items())]}})

    # -- lifecycle -----------------------------------------------------------------------------

    def shutdown(self, grace: float) -> bool:
        """Stop scheduling and end API retries, waits and running Git commands at once (a pass
        whose fetch is ended fails closed: nothing changed or pruned); wait up to ``grace`` seconds
        for a running pass to finish (a pass cut short leaves each Application's status whole:
        it is written in one request). Returns False when a pass was still running (the caller
        then exits without waiting for it)."""
        self.stopping.set()
        self._trigger.set()
        self.kube.interrupt.set()
        if self.notifier is not None:
            self.notifier.close()
        gitproc.cancel()  # a fetch from a remote that never answers fails now, not at --fetch-timeout
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        if self._pass_lock.acquire(blocking=False):
            log.info("stopping: no pass is running")
            self._pass_lock.release()
            return True
        log.info("stopping: waiting up to %.0fs for the running pass", grace)
        if self._pass_lock.acquire(timeout=grace):
            self._pass_lock.release()
            return True
        log.warning("a pass was still running after %.0fs; abandoning it", grace)
        return False

