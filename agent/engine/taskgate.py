"""The task gate: which task Jobs a pass creates, whether the rest of an Application waits, and
what ``status.tasks[]`` says. Pure.

Why (issue 43): a migration must run before the new version serves, exactly once per content,
and never loop. Argo CD's hooks run on no-op syncs and after a Job's TTL removed it; Flux has no
order at all. Here each task's Job is named after a digest of what it runs (``job.task_digest``)
and its last run is recorded in the Application's ``status.tasks[]``, so:

- **Exactly once per digest.** A task whose recorded run of the current digest ``Succeeded`` is
  done, whether or not its Job is still there (deleted by hand, by the garbage collector, or
  pruned as history); drift, a replicas-only change, a restart or a webhook with nothing new
  name the same digest and create nothing. A new digest creates exactly one Job.
- **The gate.** While a ``BeforeRollout`` task of the current digest has not succeeded, every
  other child but the ConfigMap stays as it is (``holding``): not applied, not pruned. The
  ConfigMap is applied, so the task sees the new files; the running pods do not, since they
  mount each file by ``subPath``, which the kubelet never refreshes. On a first install only the
  ConfigMap and the Job exist. ``AfterRollout`` tasks start once the Deployment is unchanged by
  the pass and Healthy (``rollout_done``): the rollout of this content is over.
- **Failure holds.** A failed run (its Job ``Failed``, or recorded ``Failed`` when the Job is
  gone) keeps the gate shut and creates no Job, until a new commit (the run was for another one)
  or a sync-now request (``sync_now.pending``) asks again: then its failed Job is deleted and
  created anew (``rerun``).

Live Jobs are read by the ``heumsi.github.io/task`` label and their name; ``KEEP`` per task are
kept (the current one first, then the newest), the others, and a removed task's, are pruned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.api.labels import TASK_LABEL
from agent.api.objects import Obj
from agent.engine.conditions import Reason
from agent.kinds import job
from agent.kinds.health import Health, Status

WAITS_FOR_ROLLOUT = "waits for the rollout to finish"
"""The message of an AfterRollout task whose Job is not created yet."""


@dataclass(frozen=True)
class Run:
    """One task's run at the current digest: ``task`` (its name), ``when``, ``digest``, ``job``
    (its Job's name), ``commit`` (the commit it was or is started for: the recorded one when it
    ran before, else the pass's; None when unknown), ``recorded`` (its ``status.tasks[]`` entry
    when it is of this digest, else None), ``state``: ``job.SUCCEEDED`` (done), ``job.FAILED``
    (failed, not run again this pass), ``job.RUNNING`` (its Job exists and has not finished),
    ``CREATE`` (its Job is created this pass) or ``WAITING`` (AfterRollout, the rollout is not
    over)."""

    task: str
    when: str
    digest: str
    job: str
    commit: str | None
    recorded: Obj | None
    state: str


CREATE, WAITING = "Create", "Waiting"


@dataclass(frozen=True)
class Gate:
    """What the pass does for one Application's tasks. ``runs``: one per task, in the order they
    run; ``holding``: a BeforeRollout task has not succeeded, so the other children (but the
    ConfigMap) stay as they are; ``rerun``: live failed Jobs to delete before their new run is
    created; ``keep``: names of the live Jobs to keep (the others are pruned); ``installed``: a
    version of the Application serves already (its Deployment exists), which a held rollout keeps."""

    runs: tuple[Run, ...] = ()
    holding: bool = False
    rerun: tuple[Obj, ...] = ()
    keep: frozenset[str] = field(default_factory=frozenset)
    installed: bool = False

    @property
    def create(self) -> frozenset[str]:
        """Names of the Jobs the pass creates."""
        return frozenset(r.job for r in self.runs if r.state == CREATE)


def _recorded(recorded: list[Obj], task: str, digest: str) -> Obj | None:
    """The ``status.tasks[]`` entry of ``task`` when it is of ``digest``, else None."""
    return next((e for e in recorded if isinstance(e, dict) and e.get("name") == task
                 and e.get("digest") == digest), None)


def _state(live: Obj | None, entry: Obj | None, run_commit: str | None, commit: str | None, asked: bool) -> str:
    """A BeforeRollout-or-ready task's state (``Run.state``) from its live Job ``live`` and its
    recorded run ``entry``; ``asked``: a sync-now request is pending; a failed run is run again
    when asked, or when the pass's ``commit`` is another than the failed run's ``run_commit``."""
    phase = job.phase(live) if live is not None else (entry or {}).get("phase")
    if phase == job.SUCCEEDED:
        return job.SUCCEEDED
    if phase == job.FAILED:
        again = asked or (commit is not None and run_commit is not None and commit != run_commit)
        return CREATE if again else job.FAILED
    return job.RUNNING if live is not None else CREATE


def decide(app_name: str, spec: Obj, jobs: list[Obj], recorded: list[Obj], commit: str | None, *,
           asked: bool, rollout_done: bool, installed: bool = False) -> Gate:
    """The gate of the Application ``app_name`` with ``spec`` (module docstring). ``jobs``: its live
    Jobs (owned, any task); ``recorded``: its live ``status.tasks[]``; ``commit``: the commit the
    pass works from (None for a hand-applied Application); ``asked``: a sync-now request is
    pending; ``rollout_done``: its Deployment is unchanged by this pass and Healthy;
    ``installed``: its Deployment exists (``Gate.installed``)."""
    by_name = {j["metadata"]["name"]: j for j in jobs}
    runs: list[Run] = []
    rerun: list[Obj] = []
    holding = False
    for task in job.tasks(spec):
        when = spec["tasks"][task].get("when", job.BEFORE_ROLLOUT)
        digest = job.task_digest(app_name, spec, task)
        name = job.job_name(app_name, task, digest)
        live, entry = by_name.get(name), _recorded(recorded, task, digest)
        run_commit = entry.get("commit") if entry is not None and entry.get("job") == name else None
        if when == job.AFTER_ROLLOUT and live is None and (entry or {}).get("phase") != job.SUCCEEDED \
                and (holding or not rollout_done):
            state = WAITING
        else:
            state = _state(live, entry, run_commit, commit, asked)
        if state == CREATE and live is not None:
            rerun.append(live)
        started = run_commit if state != CREATE and run_commit is not None else commit
        runs.append(Run(task, when, digest, name, started, entry, state))
        holding = holding or (when == job.BEFORE_ROLLOUT and state != job.SUCCEEDED)
    return Gate(tuple(runs), holding, tuple(rerun), _kept(runs, jobs), installed)


def _kept(runs: list[Run], jobs: list[Obj]) -> frozenset[str]:
    """Names of the live Jobs kept: per task of ``runs``, its current Job and the newest others,
    ``job.KEEP`` in all; none of a task no longer in the spec."""
    current = {r.task: r.job for r in runs}
    kept: set[str] = set()
    for task, name in current.items():
        mine = [j for j in jobs if ((j["metadata"].get("labels") or {}).get(TASK_LABEL)) == task]
        others = sorted((j for j in mine if j["metadata"]["name"] != name),
                        key=lambda j: (j["metadata"].get("creationTimestamp") or "", j["metadata"]["name"]),
                        reverse=True)
        kept.update(j["metadata"]["name"] for j in others[:job.KEEP - 1])
        if any(j["metadata"]["name"] == name for j in mine):
            kept.add(name)
    return frozenset(kept)


def entries(gate: Gate, jobs: dict[str, Obj]) -> list[Obj]:
    """``status.tasks[]`` after the pass: per run, from its live Job in ``jobs`` (name -> Job as
    the pass left it: created, or read) when there is one (``job.task_status``); else its
    recorded entry when it has one; else a ``Pending`` entry saying why no Job runs yet."""
    out = []
    for run in gate.runs:
        live = jobs.get(run.job)
        if live is not None:
            out.append(job.task_status(run.task, run.digest, run.job, live, run.commit or ""))
        elif run.recorded is not None and run.state in (job.SUCCEEDED, job.FAILED):
            out.append(dict(run.recorded))
        else:
            entry = job.task_status(run.task, run.digest, run.job, None, run.commit or "")
            if run.state == WAITING:
                entry["message"] = f"Job {run.job} {WAITS_FOR_ROLLOUT}"
            out.append(entry)
    for entry in out:
        if not entry.get("commit"):
            entry.pop("commit", None)
    return out


@dataclass(frozen=True)
class Verdict:
    """What the tasks make of the Application's status: ``reason`` (``TaskRunning`` or
    ``TaskFailed``), ``message`` and ``health`` (Progressing or Degraded); None from ``verdict``
    when every task is done."""

    reason: str
    message: str
    health: Health


def verdict(gate: Gate, found: list[Obj]) -> Verdict | None:
    """The tasks' verdict from ``entries``' ``found``: ``TaskFailed`` (Degraded) when a run
    failed, naming its Job and why, what it holds (the old version, or on a first install
    everything) and what runs it again; else ``TaskRunning`` (Progressing)
    when one has not succeeded, naming it and whether the rollout waits for it; else None."""
    for run, entry in zip(gate.runs, found):
        if entry.get("phase") == job.FAILED:
            held = "" if run.when != job.BEFORE_ROLLOUT else \
                "the old version keeps serving; " if gate.installed else "nothing else is created; "
            message = (f"task {run.task} failed ({entry.get('message') or f'Job {run.job} failed'}); " + held
                       + "a new commit or a sync-now request (python -m agent reconcile) runs it again")
            return Verdict(Reason.TASK_FAILED, message, Health(Status.DEGRADED, message))
    for run, entry in zip(gate.runs, found):
        if entry.get("phase") != job.SUCCEEDED:
            if run.when == job.BEFORE_ROLLOUT:
                message = f"waiting for task {run.task} (Job {run.job}) to complete before the rollout"
            elif run.state == WAITING:
                message = f"task {run.task} (Job {run.job}) {WAITS_FOR_ROLLOUT}"
            else:
                message = f"waiting for task {run.task} (Job {run.job}) to complete after the rollout"
            return Verdict(Reason.TASK_RUNNING, message, Health(Status.PROGRESSING, message))
    return None
