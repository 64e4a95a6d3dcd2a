"""Commit status on the Git host: GitHub, GitLab or Gitea. One small class per host.

What is posted, per pass and context (issue 32; ``verdict`` and ``verdicts`` are pure):

- ``pending`` when a pass starts applying a commit no status was posted for yet;
- ``success`` when every Application of the commit is synced and ``Ready`` (suspended and kept
  ones count as done);
- ``failure`` when any failed (or is Degraded), the description naming how many and the first
  few, and the health message of the first Degraded one (why its rollout failed), at most 140
  characters (GitHub's limit);
- nothing new while some are still rolling out: a later pass that sees them ``Ready`` posts
  ``success`` once.

Which commit (issue 45): an Application's rollout is the commit that deployed its content
(``status.lastChangedCommit``; ``Report.attributed``), not the commit of whatever later pass
saw it end. So a bad image's ``failure`` lands on the commit that brought it, and an unrelated
later commit gets the verdict of its own Applications (``success`` when it changed none). What
the pass itself failed at (an apply refused, a broken file) is the pass's commit. A commit
whose ``pending`` is not followed by a verdict because a later commit replaced all its
Applications' content first gets ``success`` "superseded by <12 hex> before its rollout was
decided": it broke nothing that was seen, and a red mark would blame it for nothing.

``Poster`` never posts the same (commit, context, state, description) twice: it remembers the
last one posted per commit, and after a restart reads the host's statuses of the commit first.
A ``pending`` never follows another status of the same commit. So GitHub's limit of 1,000
statuses per commit and context (then HTTP 422) is never near.

The hosts' APIs (their documentation):

- GitHub: ``POST /repos/{owner}/{repo}/statuses/{sha}`` with ``state`` (error, failure, pending,
  success), ``target_url``, ``description``, ``context``; ``GET
  /repos/{owner}/{repo}/commits/{sha}/statuses`` (newest first); ``Authorization: Bearer``.
- GitLab: ``POST /projects/:id/statuses/:sha`` with ``state`` (pending, running, success,
  failed, canceled), ``name``, ``target_url``, ``description``; ``GET
  /projects/:id/repository/commits/:sha/statuses``; header ``PRIVATE-TOKEN``; ``:id`` is the
  URL-encoded path ``group/project``.
- Gitea: ``POST /repos/{owner}/{repo}/statuses/{sha}`` with ``state`` (pending, success, error,
  failure, warning), ``context``, ``target_url``, ``description``; ``GET
  /repos/{owner}/{repo}/commits/{sha}/statuses``; ``Authorization: token``.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

from agent.engine.conditions import Reason
from agent.notify import http
from agent.source.repository import remote

PENDING, SUCCESS, FAILURE = "pending", "success", "failure"
MAX_DESCRIPTION = 140
HOSTS = ("github", "gitlab", "gitea")
NAMED = 3  # failed Applications named in a failure's description
PENDING_TEXT = "applying this commit; waiting for its Applications to be ready"
# Ready False, but nothing to wait for
DONE_REASONS = frozenset({Reason.SUSPENDED, Reason.PRUNE_SKIPPED, Reason.PRUNE_BLOCKED})


def _fit(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION - 3] + "..."


def failure_text(failed: list[str], total: int, why: tuple[str, str] | None = None) -> str:
    """``2 of 5 Applications failed: ns/a, ns/b`` (the first ``NAMED``, then ``and N more``),
    then, with ``why`` (``(key, health message)`` of a Degraded one), its reason:
    ``1 of 1 Application failed: ns/a: Deployment: ImagePullBackOff: ...`` (one failed) or
    ``...; ns/a: MESSAGE``; cut to ``MAX_DESCRIPTION`` characters."""
    names = ", ".join(failed[:NAMED]) + (f" and {len(failed) - NAMED} more" if len(failed) > NAMED else "")
    noun = "Application" if total == 1 else "Applications"
    reason = "" if why is None else f": {why[1]}" if failed == [why[0]] else f"; {why[0]}: {why[1]}"
    return _fit(f"{len(failed)} of {total} {noun} failed: {names}{reason}")


def _degraded_why(report, failed: list[str]) -> tuple[str, str] | None:
    """(key, health message) of the first of ``failed`` whose health (``report.health``) is
    Degraded with a message: the reason a rollout failed (``ImagePullBackOff: ...``)."""
    for key in failed:
        health = (getattr(report, "health", None) or {}).get(key) or {}
        if health.get("status") == "Degraded" and health.get("message"):
            return key, " ".join(str(health["message"]).split())
    return None


def verdict(report, keys: Iterable[str] | None = None, *, of_pass: bool = True) -> tuple[str, str] | None:
    """(state, description) for the pass ``report`` (``Report``: ``commit``, ``readiness``,
    ``failing()``, ``failed_files()``, ``ok``, ``health``), None when there is nothing to post (no
    commit). ``keys``: the Applications of ``readiness`` judged (None: all); ``of_pass``: the
    pass's own failures count too (an Application's failed apply, a refused file, a failed pass:
    the commit the pass was at). ``failure`` when an Application failed or is
    Degraded/Stalled (by readiness; a failed task: ``TaskFailed``), or the pass failed
    otherwise; ``pending`` while one is not yet ready; else ``success``."""
    if not report.commit:
        return None
    ready = report.readiness if keys is None else {k: report.readiness[k] for k in keys if k in report.readiness}
    own = report.failing() if of_pass else []
    apps = sorted(set(ready) | set(own))
    failed = sorted(set(own) | {k for k, (_, reason) in ready.items()
                                if reason in ("Degraded", "Stalled", Reason.TASK_FAILED)})
    if failed:
        return FAILURE, failure_text(failed, len(apps), _degraded_why(report, failed))
    if of_pass and report.failed_files():
        files = report.failed_files()
        return FAILURE, _fit(f"{len(files)} file{'s' if len(files) != 1 else ''} failed: {', '.join(files[:NAMED])}")
    if of_pass and not report.ok:
        return FAILURE, "the sync failed; the agent's log and the Applications' status say why"
    waiting = [k for k, (status, reason) in ready.items() if status != "True" and reason not in DONE_REASONS]
    if waiting:
        return PENDING, PENDING_TEXT
    if not apps and keys is not None and report.readiness:
        count = len(report.readiness)
        return SUCCESS, _fit(f"no Application changed at this commit ({count} synced; a rollout's status is on "
                             "the commit that changed it)")
    noun = "Application" if len(apps) == 1 else "Applications"
    return SUCCESS, _fit(f"{len(apps)} {noun} synced and ready")


@dataclass(frozen=True)
class Post:
    """One commit status to post: ``sha`` (full), ``state``, ``description``; ``over_pending``:
    only when the commit's last status is ``pending`` (a superseded commit: ``Poster.post``)."""

    sha: str
    state: str
    description: str
    over_pending: bool = False


def superseded_text(by: str) -> str:
    """The description of a commit superseded before its rollout was decided."""
    return f"superseded by {by[:12]} before its rollout was decided"


def verdicts(report, open_commits: Iterable[str] = ()) -> list[Post]:
    """The statuses to post after the pass ``report``, each on the commit it is about (issue 45).

    Each Application's outcome belongs to ``report.attributed[key]`` (the commit that deployed its
    content while it is synced: ``news.about``), else to ``report.commit``. The pass's commit
    gets the verdict of its own Applications and of the pass's failures (``verdict``), so an
    unrelated commit is not failed by an older commit's rollout. Each of ``open_commits`` (commits
    a ``pending`` may still stand on, or whose Applications' statuses moved in this pass) gets
    the verdict of the Applications attributed to it, unless that is ``pending`` (nothing new);
    one that no Application is attributed to any more was superseded: ``success``, "superseded
    by <12 hex>", posted only over a ``pending`` (``Post.over_pending``). In that order, each
    commit once; [] when the pass has no commit."""
    head = report.commit
    if not head:
        return []
    of: dict[str, list[str]] = {}
    for key in report.readiness:
        of.setdefault(report.attributed.get(key) or head, []).append(key)
    found = verdict(report, of.get(head, []))
    out = [Post(head, *found)] if found else []
    for sha in dict.fromkeys(open_commits):
        if not sha or sha == head:
            continue
        if sha not in of:
            out.append(Post(sha, SUCCESS, superseded_text(head), over_pending=True))
        elif (judged := verdict(report, of[sha], of_pass=False)) and judged[0] != PENDING:
            out.append(Post(sha, *judged))
    return out


class Host:
    """One host's API. ``api_url``: its base (``https://api.github.com``); ``repository``:
    ``owner/name`` (GitLab: the project's path); ``token``: sent in the host's header."""

    name = "host"
    states = {PENDING: PENDING, SUCCESS: SUCCESS, FAILURE: FAILURE}

    def __init__(self, api_url: str, repository: str, token: str):
        self.api_url, self.repository, self._token = api_url.rstrip("/"), repository, token

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _repo(self) -> str:
        """``owner/name`` with each segment quoted for a URL path."""
        return "/".join(urllib.parse.quote(part, safe="") for part in self.repository.split("/"))

    def post_url(self, sha: str) -> str:
        return f"{self.api_url}/repos/{self._repo()}/statuses/{urllib.parse.quote(sha, safe='')}"

    def list_url(self, sha: str) -> str:
        return f"{self.api_url}/repos/{self._repo()}/commits/{urllib.parse.quote(sha, safe='')}/statuses"

    def body(self, state: str, description: str, context: str, target_url: str | None) -> dict:
        out = {"state": self.states[state], "description": description, "context": context}
        if target_url:
            out["target_url"] = target_url
        return out

    def existing(self, items: list, context: str) -> tuple[str, str] | None:
        """(state in our words, description) of the newest status of ``context`` in the host's
        list (newest first), None when there is none."""
        back = {v: k for k, v in self.states.items()}
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("context") == context:
                return back.get(item.get("state") or item.get("status"), item.get("state")), item.get("description") or ""
        return None

    def post(self, sha: str, state: str, description: str, context: str, target_url: str | None,
             timeout: float) -> None:
        body = json.dumps(self.body(state, description, context, target_url)).encode()
        http.request("POST", self.post_url(sha), body=body, timeout=timeout,
                     headers={"Content-Type": "application/json", "Accept": "application/json", **self.headers()})

    def read(self, sha: str, context: str, timeout: float) -> tuple[str, str] | None:
        answer = http.request("GET", self.list_url(sha), timeout=timeout,
                              headers={"Accept": "application/json", **self.headers()})
        try:
            items = json.loads(answer.body or b"[]")
        except ValueError:
            return None
        return self.existing(items, context)


class GitHub(Host):
    name = "github"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}", "Accept": "application/vnd.github+json"}


class Gitea(Host):
    name = "gitea"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self._token}"}


class GitLab(Host):
    name = "gitlab"
    states = {PENDING: "running", SUCCESS: "success", FAILURE: "failed"}

    def headers(self) -> dict[str, str]:
        return {"PRIVATE-TOKEN": self._token}

    def _project(self) -> str:
        return urllib.parse.quote(self.repository, safe="")

    def post_url(self, sha: str) -> str:
        return f"{self.api_url}/projects/{self._project()}/statuses/{sha}"

    def list_url(self, sha: str) -> str:
        return f"{self.api_url}/projects/{self._project()}/repository/commits/{sha}/statuses"

    def body(self, state: str, description: str, context: str, target_url: str | None) -> dict:
        out = super().body(state, description, context, target_url)
        out["name"] = out.pop("context")
        return out

    def existing(self, items: list, context: str) -> tuple[str, str] | None:
        renamed = [{**i, "context": i.get("name")} for i in items if isinstance(i, dict)] if isinstance(items, list) else []
        return super().existing(renamed, context)


HOST_CLASSES = {"github": GitHub, "gitlab": GitLab, "gitea": Gitea}


class Poster:
    """Posts a commit's status through ``host`` under ``context``, each (commit, context, state,
    description) once. ``post(sha, state, description, timeout)`` runs in the outbox's thread:
    it reads the host's statuses of ``sha`` the first time it meets it (after a restart they are
    the record), then posts unless the same was posted, or a ``pending`` would follow another
    status of that commit. Thread-safe."""

    def __init__(self, host: Host, context: str, target_url: str | None):
        self.host, self.context, self.target_url = host, context, target_url
        self._last: dict[str, tuple[str, str] | None] = {}
        self._lock = threading.Lock()

    def wanted(self, sha: str, state: str, description: str) -> bool:
        """False when posting would repeat what is known to be there (pure on what is known)."""
        with self._lock:
            if sha not in self._last:
                return True
            last = self._last[sha]
        return not (last == (state, description) or (state == PENDING and last is not None))

    def last(self, sha: str) -> tuple[str, str] | None:
        """(state, description) last known posted on ``sha`` (None: none, or not known yet)."""
        with self._lock:
            return self._last.get(sha)

    def post(self, sha: str, state: str, description: str, timeout: float, over_pending: bool = False) -> bool:
        """Post unless ``wanted`` says no (after reading the host once); True when posted.
        ``over_pending``: only when the commit's last status is ``pending`` (a superseded
        commit: one with no status, or a final one, is left as it is)."""
        with self._lock:
            known = sha in self._last
        if not known:
            found = self.host.read(sha, self.context, timeout)
            with self._lock:
                self._last.setdefault(sha, found)
        if over_pending and (self.last(sha) or ("",))[0] != PENDING:
            return False
        if not self.wanted(sha, state, description):
            return False
        self.host.post(sha, state, description, self.context, self.target_url, timeout)
        with self._lock:
            self._last[sha] = (state, description)
            if len(self._last) > 100:  # old commits are done with
                self._last.pop(next(iter(self._last)))
        return True


def from_repo(kind: str, repo: str) -> tuple[str | None, str | None]:
    """(API base URL, repository) for ``--commit-status KIND`` derived from ``--repo``: GitHub
    ``github.com/o/r`` -> (``https://api.github.com``, ``o/r``), another GitHub host (Enterprise)
    -> ``https://HOST/api/v3``; GitLab -> ``https://HOST/api/v4`` and the project's whole path
    (``group/sub/project``); Gitea -> ``https://HOST/api/v1``. (None, None) when ``repo`` is no
    remote URL; the repository is None for GitHub or Gitea when the path is not ``owner/name``.
    ``repo`` is read by ``repository.remote`` (every URL form Git accepts: ``https://``,
    ``ssh://``, scp-like ``git@host:path``); the API is on the host's HTTPS port, whatever
    port ``repo`` names."""
    found = remote(repo)
    if found is None or not found.host or not found.path:
        return None, None
    host, path = found.host, found.path
    two = path if path.count("/") == 1 else None
    if kind == "github":
        return ("https://api.github.com" if host == "github.com" else f"https://{host}/api/v3"), two
    if kind == "gitlab":
        return f"https://{host}/api/v4", path
    return f"https://{host}/api/v1", two
