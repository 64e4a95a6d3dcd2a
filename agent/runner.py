"""``python -m agent run``: passes on a schedule, between them on cluster changes, one at a time.

APScheduler drives the interval pass (``max_instances=1`` and ``coalesce``: a pass that overruns
delays the next instead of stacking). Watches on Applications and the agent's children trigger
an extra pass within about a second when something changes, using the last fetched commit
(no Git traffic); they are never the only trigger. A sync-now request (the annotation
``heumsi.github.io/reconcile-requested-at`` changed to a token not yet handled, see
``sync_now``) asks for a pass that does ask Git, coalesced like a webhook's. When an Application
is backing off (``backoff``) and its retry comes before the next interval pass, a one-off date
job runs a pass then. With leader election, only the replica holding the Lease runs passes; a
replica that loses the lease stops.
"""

from __future__ import annotations

import datetime
import json
import logging
import threading
import time

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.background import BackgroundScheduler

from . import backoff, gitproc, sync, sync_now
from .kube import Kube
from .render import AGENT_NAME, MANAGED_BY
from .report import Report
from .schema import GROUP
from .server import Health, Metrics

log = logging.getLogger("agent.run")
TRIGGER_DEBOUNCE = 0.5  # seconds: cluster changes closer than this share one pass


class Runner:
    """Runs sync passes for ``opts`` against ``kube``.

    ``interval``/``jitter``: seconds between scheduled passes and the random spread added to
    each. ``metrics``/``health``: updated after every pass. Thread-safe: passes never overlap.
    """

    def __init__(self, kube: Kube, opts: sync.Options, *, interval: float, jitter: float,
                 metrics: Metrics, health: Health, watch: bool = True,
                 retry: backoff.Policy = backoff.Policy(skip=True)):
        self.kube, self.opts, self.retry = kube, opts, retry
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
        self._online_trigger = "webhook"  # what asked for it, for the pass's log line
        self._last_online_start: float | None = None
        self._watch_pending = False
        self._scheduler = BackgroundScheduler(timezone=datetime.timezone.utc)

    # -- leading -------------------------------------------------------------------------------

    def start_leading(self) -> None:
        """Begin syncing: the interval job (first pass now), the watches and their trigger loop."""
        log.info("leading: starting passes every %.0fs", self.interval)
        self.health.leading = True
        self.metrics.leader.set(1)
        self._scheduler.add_job(self.scheduled_pass, "interval", id="interval", seconds=self.interval, jitter=self.jitter,
                                max_instances=1, coalesce=True, misfire_grace_time=None,
                                next_run_time=datetime.datetime.now(datetime.timezone.utc))
        self._scheduler.start()
        if self.watch_enabled:
            selector = f"{MANAGED_BY}={AGENT_NAME}"
            for group, kind, labels in ((GROUP, "Application", None), ("apps", "Deployment", selector),
                                        ("", "Service", selector)):
                threading.Thread(target=self.kube.watch, args=(group, kind, labels, self._on_event, self.stopping),
                                 name=f"watch-{kind}", daemon=True).start()
        threading.Thread(target=self._trigger_loop, name="trigger", daemon=True).start()

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

    def _on_event(self, event_type: str, obj: dict | None) -> None:
        if obj and obj.get("kind") == "Application" and event_type in ("ADDED", "MODIFIED") \
                and sync_now.pending(obj):
            self.request_pass(trigger="reconcile-request")  # sync now: ask Git, too
            return
        if event_type == "MODIFIED" and obj and obj.get("kind") == "Application":
            generation = obj["metadata"].get("generation")
            if generation == (obj.get("status") or {}).get("observedGeneration"):
                return  # a status write (usually this agent's own, which also records a handled
                # sync-now token, so it never asks again): nothing to reconcile
        self._watch_pending = True
        self._trigger.set()

    def request_pass(self, trigger: str = "webhook") -> bool:
        """Ask for an online pass (one that asks Git) soon, e.g. for a webhook; returns at once.
        Requests coalesce with each other and with watch triggers (one pass serves them all) and
        with the schedule (a pass that started after the request serves it). False when this
        replica does not sync (a standby, or stopping). ``trigger`` names the asker in the
        pass's log line (``webhook``, ``reconcile-request``)."""
        if not self.health.leading or self.stopping.is_set():
            return False
        with self._request_lock:
            self._online_requested_at = time.monotonic()
            self._online_trigger = trigger
            self._trigger.set()
        return True

    def _trigger_loop(self) -> None:
        while not self.stopping.is_set():
            if self._trigger.wait(timeout=1.0):
                self.stopping.wait(TRIGGER_DEBOUNCE)
                with self._request_lock:
                    self._trigger.clear()
                    requested, self._online_requested_at = self._online_requested_at, None
                    asked_by = self._online_trigger
                    watched, self._watch_pending = self._watch_pending, False
                if self.stopping.is_set():
                    continue
                if requested is not None and self.run_pass(offline=False, trigger=asked_by,
                                                           requested_at=requested) is not None:
                    continue  # an online pass covers what the watches saw, too
                if watched:
                    self.run_pass(offline=True, trigger="watch")

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

    def run_pass(self, offline: bool, trigger: str, requested_at: float | None = None) -> Report | None:
        """One pass, unless stopping or another pass is running (then it waits its turn).
        ``requested_at``: monotonic time of the request; None is returned without a pass when an
        online pass started after it (that pass already saw what the request was about)."""
        with self._pass_lock:
            if self.stopping.is_set():
                return None
            if requested_at is not None and (self._last_online_start or float("-inf")) >= requested_at:
                return None
            started = time.monotonic()
            if not offline:
                self._last_online_start = started
            report = sync.run(self.kube, self.opts, known_commit=self.last_commit,
                              offline=offline and self.last_commit is not None, retry=self.retry)
            duration = time.monotonic() - started
            self._schedule_retry(report)
        if report.commit and not report.fetch_failed:
            self.last_commit = report.commit
        self._observe(report, duration, trigger)
        return report

    def _observe(self, report: Report, duration: float, trigger: str) -> None:
        m = self.metrics
        m.pass_duration.observe(duration)
        m.passes.labels(result="success" if report.ok else "failure").inc()
        for change in report.changes:
            if change.action not in ("unchanged", "suspended"):  # left alone: not acted on
                m.objects.labels(kind=change.subject.split("/", 1)[0], action=change.action).inc()
        if report.fetch_seconds is not None:
            m.fetch_duration.observe(report.fetch_seconds)
        if report.fetch_failed:
            m.fetch_failures.inc()
        if report.ok:
            m.last_synced.set(time.time())
        self.health.pass_finished()
        counts = report.counts()
        log.log(logging.INFO if report.ok else logging.WARNING, "pass %s", "succeeded" if report.ok else "failed",
                extra={"fields": {"event": "pass", "trigger": trigger, "result": "success" if report.ok else "failure",
                                  "commit": report.commit, "duration_seconds": round(duration, 3), **counts,
                                  "failed_applications": sorted(report.failed), "errors": report.errors,
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
        gitproc.cancel()  # a fetch from a remote that never answers fails now, not at --fetch-timeout
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        if self._pass_lock.acquire(timeout=grace):
            self._pass_lock.release()
            return True
        log.warning("a pass was still running after %.0fs; abandoning it", grace)
        return False


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and any ``extra={"fields": ...}``."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
                 .strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "level": record.levelname.lower(),
                 "logger": record.name, "message": record.getMessage()}
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    """Human lines; a pass's fields follow the message as ``key=value``."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = getattr(record, "fields", None)
        if fields:
            line += " " + " ".join(f"{k}={json.dumps(v) if not isinstance(v, (int, float)) else v}"
                                   for k, v in fields.items() if v not in (None, [], 0) or k == "commit")
        return line
