"""The values one pass hands from stage to stage (``sync.reconcile`` runs the stages in order).

Why frozen values: each stage takes what it needs as arguments and returns what it found or did,
so a reader follows an Application from Git (``Wanted``) through the live state (``LiveState``),
its plan (``AppPlan``), its apply (``AppsApplied``), its children (``ChildWave``) to its status,
without holding a mutable bag of the whole pass in mind. The one accumulator is the ``Report``
(``Pass.report``): every stage adds its change lines, failures and notes to it.

Keys of Applications are ``namespace/name`` (``key_of``), interned: a pass names one Application
many times (report, status, outcomes).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agent.api.objects import Obj
from agent.engine import backoff, steady as steady_
from agent.engine.options import Options
from agent.engine.plan import Identity, Step
from agent.engine.report import Report
from agent.engine.suspend import Hold
from agent.engine.taskgate import Gate
from agent.manifests.manifest import Manifest

Version = tuple[Identity, str | None]  # (identity, resourceVersion) of a live object: what ``steady`` compares
ChildFacts = tuple[Identity, str | None, Version]  # (identity, owner key when the agent owns it, version)


class AppFacts(NamedTuple):
    """What a pass derives from a live Application (``livestate.app_facts``), once per object
    in ``run``. ``key``: ``namespace/name``; ``ours``: owned by an agent (``plan.owned``);
    ``this``: by this source or a former id of it (``Options.former_source_ids``); ``mine``: by
    this source id itself (``plan.owned(app, source_id)``); ``recorded``: the commits a writer
    last tried to apply to it (``forward.recorded``); ``failing``: its status counts failures
    (``backoff.failures``), so it may be backing off. Held so that a push's pass reads none of
    10,000 Applications' metadata and status again (issue 48)."""

    key: str
    ours: bool
    this: bool
    mine: bool
    recorded: tuple[str, ...]
    failing: bool


def key_of(obj: Obj) -> str:
    """``namespace/name`` of an object (``""`` for no namespace), interned."""
    return sys.intern(f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}")


@dataclass(frozen=True)
class Wanted:
    """What Git wants this pass: ``manifests`` (``manifests.Manifest``: valid, in scope, in file
    order) and, for each, its key (``keys``, same order), file (``paths``) and line (``lines``);
    ``blobs``: path -> Git blob id of the commit's files; ``problems``: the files or Applications
    refused (a refused file blocks the prunes it could hide: ``hidden``); ``outside``: how many of
    ``problems`` are Applications ``--allowed-namespaces`` refused; ``forbidden``: how many the
    tenancy policy refused (``tenancy.refuse``). Either blocks every prune (fail closed)."""

    manifests: list[Manifest]
    blobs: dict[str, str] = field(default_factory=dict)
    problems: list[Any] = field(default_factory=list)  # manifests.ManifestError
    outside: int = 0
    forbidden: int = 0
    keys: list[str] = field(init=False)
    paths: dict[str, str] = field(init=False)
    lines: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        keys = [sys.intern(f"{m.namespace}/{m.name}") for m in self.manifests]  # what ``key_of`` returns
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "paths", {key: m.path for key, m in zip(keys, self.manifests)})
        object.__setattr__(self, "lines", {key: m.line for key, m in zip(keys, self.manifests)})


@dataclass(frozen=True)
class Pass:
    """What every stage of one pass works with: ``kube`` (an ``events.Batch`` around the cluster:
    ``change`` notes an object's action for its Application's Event), ``opts``, ``report`` (the
    one accumulator), ``git`` (``Wanted``), ``retry`` (the backoff policy) and ``steady`` (what
    ``run``'s previous pass left; None for ``sync --once``)."""

    kube: Any
    opts: Options
    report: Report
    git: Wanted
    retry: backoff.Policy = backoff.ONE_SHOT
    steady: steady_.Steady | None = None


@dataclass(frozen=True)
class LiveState:
    """The cluster as the pass read it (``livestate.read_live``). ``apps``: every live Application;
    ``app_facts``: the ``AppFacts`` of each, same order;
    ``children``: every live object with the agent's managed-by label, of every child kind;
    ``child_facts``: (identity, owner key or None, (identity, resourceVersion)) of each;
    ``children_of``: owner key -> [(child, identity, (identity, resourceVersion))];
    ``namespaces``: names of the live namespaces; ``related``: owner key -> slot -> each object
    its children make that the pass reads for its status (``ChildKind.related``: a CronJob's
    Jobs, ``Job/<name>``; never applied, paired or pruned)."""

    apps: list[Obj]
    app_facts: list[AppFacts]
    children: list[Obj]
    child_facts: list[ChildFacts]
    children_of: dict[str, list[tuple[Obj, Identity, Version]]]
    namespaces: set[str]
    related: dict[str, dict[str, Obj]] = field(default_factory=dict)

    def by_key(self) -> dict[str, Obj]:
        """key -> live Application."""
        return {facts.key: app for facts, app in zip(self.app_facts, self.apps)}


@dataclass(frozen=True)
class AppPlan:
    """The Applications' plan (``appplan.plan_applications``). ``prune``: whether this pass prunes
    (on, no problems, no guard tripped); ``live``: key -> live Application; ``hits``: key ->
    ``steady.Entry`` of each Application unchanged since ``run``'s previous pass (neither
    rendered nor decided); ``desired``: the rendered Applications (let go once applied: ``()``);
    ``notes_of``: key -> notes about its document; ``waiting``: key -> ``backoff.Waiting`` of each
    one skipped while backing off; ``steps``: ``plan.Step`` of each Application (only its prunes
    once applied); ``refused``: keys another source holds that this source's Git has too."""

    prune: bool
    live: dict[str, Obj]
    hits: dict[str, steady_.Entry]
    desired: tuple[Obj, ...]
    notes_of: dict[str, list[str]]
    waiting: dict[str, backoff.Waiting]
    steps: list[Step]
    refused: frozenset[str]


@dataclass(frozen=True)
class AppsApplied:
    """Applications after their apply (``appapply``). ``in_scope``: key -> live Application whose
    children this pass syncs; ``failed``: key -> live Application whose own apply failed;
    ``written``: keys whose own apply wrote (created, configured, recreated, adopted);
    ``foreign``: another source's Applications; ``holds``: key -> ``suspend.Hold`` of each one
    suspended (``suspend.application``)."""

    in_scope: dict[str, Obj]
    failed: dict[str, Obj]
    written: frozenset[str]
    foreign: frozenset[str] = frozenset()
    holds: dict[str, Hold] = field(default_factory=dict)

    def let_go(self, keys: list[str]) -> list[Obj]:
        """Replace, in place, the live Application of each of ``keys`` (in ``in_scope`` or
        ``failed``) by its identity: apiVersion, kind and metadata name, namespace, uid and
        resourceVersion, what the pass reads of it once its status is written (``remember``:
        ``steady.Steady.after``). Returns the Applications let go. The one change made to a
        stage's value after it was returned, and only by the status sweep, its last stage. Why:
        the sweep writes every Application's status, the watches replace each, and while the
        pass held the ones it read, all 10,000 were alive twice at the sweep's end (issue 48)."""
        gone: list[Obj] = []
        for key in keys:
            held = self.in_scope if key in self.in_scope else self.failed
            app = held.get(key)
            if app is None:
                continue
            meta = app.get("metadata") or {}
            held[key] = {"apiVersion": app.get("apiVersion"), "kind": app.get("kind"),
                         "metadata": {k: meta[k] for k in _IDENTITY if k in meta}}
            gone.append(app)
        return gone


_IDENTITY = ("name", "namespace", "uid", "resourceVersion")


@dataclass(frozen=True)
class ChildIndex:
    """The live children (``childapply.index``): ``by_id``: identity -> live child (a desired child
    pairs with the one of its identity); ``live_of``: owner key -> slot -> owned live child (its
    kind, or ``Kind/name`` for a kind with several per Application: ``registry.slot``);
    ``related``: ``LiveState.related``."""

    by_id: dict[Identity, Obj]
    live_of: dict[str, dict[str, Obj]]
    related: dict[str, dict[str, Obj]] = field(default_factory=dict)


@dataclass(frozen=True)
class ChildWave:
    """What applying the children of some Applications did (``childapply.apply_wave``), merged
    over the waves of a pass (``merged``). ``paired``: identities of live children a desired one
    paired with (not pruned); ``live_of``: key -> slot (``registry.slot``) -> child as seen,
    then as applied; ``written``: keys with a child written; ``held``: key -> slot -> subject
    held by its own annotation; ``taken``: key -> slots whose name someone else's object holds;
    ``opted``: keys of Applications that opted in to adopt (``plan.opted_in``); ``related``: key ->
    slot -> what its children make (``LiveState.related``), read for its status only; ``gates``:
    key -> its task gate (``taskgate.decide``), for each Application with tasks the wave decided."""

    paired: frozenset[Identity] = frozenset()
    live_of: dict[str, dict[str, Obj]] = field(default_factory=dict)
    written: frozenset[str] = frozenset()
    held: dict[str, dict[str, str]] = field(default_factory=dict)
    taken: dict[str, set[str]] = field(default_factory=dict)
    opted: frozenset[str] = frozenset()
    related: dict[str, dict[str, Obj]] = field(default_factory=dict)
    gates: dict[str, Gate] = field(default_factory=dict)

    def merged(self, other: ChildWave) -> ChildWave:
        """This wave and ``other`` (of other Applications) as one."""
        return ChildWave(self.paired | other.paired, {**self.live_of, **other.live_of}, self.written | other.written,
                         {**self.held, **other.held}, {**self.taken, **other.taken}, self.opted | other.opted,
                         {**self.related, **other.related}, {**self.gates, **other.gates})
