"""Fetch the Git source into a bare mirror and resolve refs to commits. With ``snapshot.py`` and ``submodules.py``
the only modules that import ``git``.

The remote is mirrored into a bare repository in the cache directory (one per URL and
credentials, see ``agent/source/cachedir.py``), fetched with forced refspecs so history rewritten
upstream (force-push) and deleted branches just work.
The files of one commit are read by ``agent/source/snapshot.py``.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import posixpath
import re
import shutil
import tempfile
import urllib.parse
from dataclasses import dataclass, replace
from pathlib import Path

import git

from agent.common import redaction
from agent.source import cachedir, gitproc, mirrorrepo
from agent.source.repository import identity as repository_identity  # pure; see repository.py

MANIFEST_SUFFIXES = (".yaml", ".yml")
FETCH_REFSPECS = ("+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*",
                  "+HEAD:refs/remotes/origin/HEAD")
_SHA = re.compile(r"^[0-9a-f]{4,40}$")
FULL_REF_PREFIXES = ("refs/heads/", "refs/tags/")
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


class SourceError(Exception):
    """The source could not be fetched or read (remote unreachable, unknown ref, bad --path).
    The message never contains credentials."""


class Interrupted(SourceError):
    """The fetch was cut short because the agent is shutting down (SIGTERM): no fault of the
    source, so nothing records it as unavailable."""


class PathMissing(SourceError):
    """``--path`` does not exist in the commit (Git keeps no empty directories, so removing
    the last file under it removes the directory too)."""


def redact(text: str, url: str | None = None, credentials: Credentials | None = None) -> str:
    """``text`` with the user-info of any URL replaced by ``***@`` and the user and password of
    ``url``'s user-info and the token of ``credentials`` removed wherever else they appear, in
    every form (``redaction.forms``: as written, percent-encoded, base64, HTTP Basic)."""
    text = _USERINFO.sub("***@", text)
    secrets, users = [], []
    if url:
        match = re.match(r"^[a-z+]+://([^/@]*)@", url)
        if match:
            parts = match.group(1).split(":", 1)
            secrets += [*parts, *map(urllib.parse.unquote, parts)]
            users.append(urllib.parse.unquote(parts[0]))
    if credentials and credentials.token:
        secrets.append(credentials.token)
        users.append(credentials.username)
    return redaction.scrub(text, secrets, users) if secrets else text


def split_credentials(url: str) -> tuple[str, Credentials | None]:
    """``url`` without user-info, and the user/password it carried as Credentials (None when
    it had none). Keeps tokens out of the mirror's config, logs and the cache key."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc or parts.scheme not in ("http", "https"):
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urllib.parse.urlunsplit(parts._replace(netloc=host))
    return clean, Credentials(token=urllib.parse.unquote(password) or None,
                              username=urllib.parse.unquote(user) or "git")


def _normalise(url: str) -> str:
    if "://" not in url and not url.startswith("git@") and os.path.exists(url):
        return os.path.abspath(url)
    return split_credentials(url)[0]


def source_id(url: str, path: str = ".") -> str:
    """A short stable name for a source: ``src-`` and the first 12 hex digits of sha256 over
    the repository's identity (``repository.identity``: one for every URL form of a repository,
    ``https://``, ``ssh://``, scp-like, with or without ``.git``, credentials or a trailing
    ``/``; a local path or ``file://`` URL is its absolute real path) and the normalised
    ``path`` (``apps/`` and ``./apps`` are ``apps``). It labels the Applications a source owns
    (and so prunes), so a new spelling of ``--repo`` must not make a new source: the ones it
    removed from Git in the same commit would be left behind. A label value, so at most 63
    characters (Kubernetes rule). The command line uses ``source_id_of`` with the identity of
    ``origin.repository_of`` (a checkout is its ``origin``)."""
    return source_id_of(repository_identity(url), path)


def source_id_of(identity: str, path: str = ".") -> str:
    """``source_id`` of a repository's identity (``repository.identity`` or
    ``origin.repository_of``) rather than of a URL: the same hash over ``identity#path``."""
    key = f"{identity}#{posixpath.normpath(path or '.')}"
    return "src-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def cache_path(cache_dir: str | os.PathLike, url: str, credentials: Credentials | None = None) -> Path:
    """Directory of the bare mirror of ``url`` fetched with ``credentials`` (combined as
    ``effective`` does: credentials in the URL count when ``credentials`` has no token or key):
    ``cache_dir/<url key>-<credential key>.git``, see ``agent/source/cachedir.py``. A source reads only
    the mirror of its own credentials; no secret appears in the path. Never raises."""
    clean, credentials = effective(url, credentials)
    return cachedir.mirror_path(cache_dir, _normalise(clean), credentials)


@dataclass(frozen=True)
class Credentials:
    """How to authenticate to a private remote, and where the agent may go with them.
    ``token``: an HTTPS token or password, sent as HTTP basic auth for ``username`` through the
    environment (never on a command line or in a URL), never after a redirect and over plain
    ``http://`` only to a loopback host or with ``insecure_http`` (``--allow-insecure-http``; see
    ``plain_http_refused``). ``ssh_key_file``/``known_hosts_file``: a private key and the host
    keys to trust (strict host key checking). ``submodule_hosts``: host names or ``*`` globs
    (``--submodule-hosts``, lower case) a submodule may be fetched from besides ``--repo``'s own
    host (``submodules.host_allowed``)."""

    token: str | None = None
    username: str = "git"
    ssh_key_file: str | None = None
    known_hosts_file: str | None = None
    insecure_http: bool = False
    submodule_hosts: tuple[str, ...] = ()


def plain_http_refused(url: str, credentials: Credentials | None) -> str | None:
    """Why the token of ``credentials`` may not be sent to ``url`` (a clean URL), or None when it
    may: it would cross the network unencrypted, over ``http://`` to a host that is not loopback
    (``localhost``, 127.0.0.0/8, ::1: "potentially trustworthy" by the W3C's Secure Contexts, 3.1),
    unless ``credentials.insecure_http``. One line, naming the host (never the token)."""
    if not credentials or not credentials.token or credentials.insecure_http:
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() != "http" or _loopback(parts.hostname or ""):
        return None
    return (f"the Git token is not sent over plain http:// to {parts.hostname}: anyone on the way could read it; "
            "use an https:// URL, or give --allow-insecure-http (GITOPS_AGENT_ALLOW_INSECURE_HTTP) to send it anyway")


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _git_env(timeout: float, credentials: Credentials | None = None) -> dict[str, str]:
    """Environment for one Git command: no prompts, SSH options, the low-speed abort and the
    token as an ``http.extraHeader`` given through ``GIT_CONFIG_COUNT``/``KEY``/``VALUE``,
    appended to any such entries the user's environment already has (never overwriting them).
    With a token, ``http.followRedirects=false`` after it (the last entry wins): Git's default
    (``initial``) moves the base URL to wherever a redirect points and sends the header there
    (issue 42; go-git's GHSA-3xc5-wrhm-f963), so with a token no redirect is followed at all."""
    creds = credentials or Credentials()
    ssh = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, int(timeout))}"]
    if creds.ssh_key_file:
        ssh += ["-i", creds.ssh_key_file, "-o", "IdentitiesOnly=yes"]
    if creds.known_hosts_file:
        ssh += ["-o", f"UserKnownHostsFile={creds.known_hosts_file}", "-o", "StrictHostKeyChecking=yes"]
    env = {
        "GIT_TERMINAL_PROMPT": "0",  # never wait for a password on a terminal
        "GIT_SSH_COMMAND": " ".join(ssh),
        "GIT_HTTP_LOW_SPEED_LIMIT": "1000",  # bytes/s; below it for ...
        "GIT_HTTP_LOW_SPEED_TIME": str(max(1, int(timeout))),  # ... this many seconds: abort
    }
    if creds.token:
        basic = base64.b64encode(f"{creds.username}:{creds.token}".encode()).decode()
        try:
            count = max(0, int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0))
        except ValueError:
            count = 0
        env.update({"GIT_CONFIG_COUNT": str(count + 2), f"GIT_CONFIG_KEY_{count}": "http.extraHeader",
                    f"GIT_CONFIG_VALUE_{count}": f"Authorization: Basic {basic}",
                    f"GIT_CONFIG_KEY_{count + 1}": "http.followRedirects",
                    f"GIT_CONFIG_VALUE_{count + 1}": "false"})
    return env


@dataclass(frozen=True)
class Fetched:
    """Result of ``fetch``: ``commit`` (full SHA) and whether objects were fetched (False when
    the remote ref still pointed at the known commit)."""

    commit: str
    fetched: bool


def effective(url: str, credentials: Credentials | None = None) -> tuple[str, Credentials | None]:
    """The URL Git is given (local paths made absolute, user-info removed) and the credentials
    used for it: ``credentials`` when they hold a token or key, else those embedded in ``url``."""
    url, embedded = split_credentials(_normalise(url) if "://" not in url else url)
    if credentials and (credentials.token or credentials.ssh_key_file):
        return url, credentials
    if embedded and credentials:  # the URL's user and password, with the flags' policy
        embedded = replace(embedded, insecure_http=credentials.insecure_http,
                           submodule_hosts=credentials.submodule_hosts)
    return url, embedded or credentials


def fetch(url: str, ref: str | None, cache_dir: str | os.PathLike, timeout: float = 60.0, *,
          credentials: Credentials | None = None, known_commit: str | None = None) -> Fetched:
    """Fetch ``url`` into its cache mirror and resolve ``ref`` to a full commit SHA.

    ``url``: a local path, ``file://``, ``https://`` or ``ssh://`` URL. ``ref``: a branch, a
    tag or a (possibly abbreviated) commit SHA; None means the remote's HEAD. ``timeout``:
    seconds a Git command may take before it is killed. ``known_commit``: the SHA synced last;
    when ``git ls-remote`` shows the ref still points at it and the mirror has it, the fetch
    is skipped (a cheap no-change check). Raises SourceError.
    """
    shown = redact(url)
    url, credentials = effective(url, credentials)
    unchanged = (lambda repo, env: _unchanged(repo, ref, known_commit, timeout, env)) if known_commit else None
    repo, fetched = mirror(url, cache_dir, timeout, credentials=credentials, what=f"fetching {shown}",
                           unchanged=unchanged, commit_ref=ref)
    return Fetched(resolve(repo, ref, url, timeout), fetched=True) if fetched else Fetched(known_commit, fetched=False)


def mirror(url: str, cache_dir: str | os.PathLike, timeout: float, *, credentials: Credentials | None,
           what: str, unchanged=None, want: str | None = None, commit_ref: str | None = None,
           env: dict[str, str] | None = None, quiet: bool = False) -> tuple[git.Repo, bool]:
    """Bring the bare mirror of ``url`` (already clean, see ``effective``) for ``credentials``
    (``cache_path``: no other credentials' mirror is ever used) up to date; returns (the
    mirror, whether a fetch ran). Holds the cache directory's lock (``cachedir.locked``). A first fetch goes to a staging directory moved into
    place only when everything worked, so a failure leaves the cache as it was.

    ``unchanged(repo, env)``: called before any fetch (``env``: the Git environment); True skips it. ``want``: a full commit SHA
    that must end up in the mirror; when it is already there nothing is fetched, and when the
    ref fetch did not bring it, the SHA itself is fetched (kept under ``refs/pinned/``).
    ``commit_ref``: the ref to be resolved; when it is a commit SHA on no fetched branch or tag,
    it is fetched by itself on every fetch (``_fetch_unlisted``), so a fresh mirror and a warm one
    that still holds the commit give the same result. ``env``: extra Git environment. ``what``: prefix of error messages ("fetching URL").
    ``quiet``: say nothing the remote wrote in an error (``_failure``), for a URL a commit named.
    Network commands run through ``gitproc`` (ended by ``gitproc.cancel`` on shutdown). Raises
    SourceError; the message is redacted.
    """
    refused = plain_http_refused(url, credentials)
    if refused:
        raise SourceError(f"{what} failed: {refused}")
    target = cache_path(cache_dir, url, credentials)
    try:
        with cachedir.locked(Path(cache_dir), timeout):
            return _mirror(url, cache_dir, target, timeout, credentials=credentials, what=what,
                           unchanged=unchanged, want=want, commit_ref=commit_ref, env=env, quiet=quiet)
    except OSError as err:  # the lock was kept too long, or the cache cannot be made (read-only, full disk)
        raise SourceError(f"{what} failed: {_scrub(redact(str(err)), credentials)}") from None


def _mirror(url, cache_dir, target: Path, timeout, *, credentials, what, unchanged, want, commit_ref,
            env, quiet) -> tuple[git.Repo, bool]:
    staging = None
    try:
        if target.exists():
            repo = git.Repo(target)
            if want and _has(repo, want, timeout):
                return repo, False
            _remove_stale_locks(target)
        else:
            Path(cache_dir).mkdir(parents=True, exist_ok=True)
            for stale in Path(cache_dir).glob(".new-*"):  # a first fetch cut short (the lock is held: none runs)
                shutil.rmtree(stale, ignore_errors=True)
            staging = Path(tempfile.mkdtemp(prefix=".new-", dir=cache_dir))
            gitproc.run(["init", "--quiet", "--bare", str(staging)], cwd=staging, timeout=timeout)
            gitproc.run(["remote", "add", "--", "origin", url], cwd=staging, timeout=timeout)
            repo = git.Repo(staging)
        git_env = {**_git_env(timeout, credentials), **(env or {})}
        if unchanged and unchanged(repo, git_env):
            return repo, False
        gitproc.run(["fetch", "--prune", "--force", "--no-tags", "origin", *FETCH_REFSPECS], cwd=repo.git_dir,
                    env=git_env, timeout=timeout)
        if want and not _has(repo, want, timeout):
            gitproc.run(["fetch", "--no-tags", "origin", f"+{want}:refs/pinned/{want}"], cwd=repo.git_dir,
                        env=git_env, timeout=timeout)
        _fetch_unlisted(repo, commit_ref, git_env, timeout, what)
        if staging is not None:
            os.replace(staging, target)
            staging = None
            mirrorrepo.forget(target)
            repo = git.Repo(target)
    except (git.GitCommandError, gitproc.Failed) as err:
        detail = _failure(err, url, credentials, commit_ref, timeout, quiet)
        raise (Interrupted if getattr(err, "cancelled", False) else SourceError)(
            f"{what} failed: {_scrub(detail, credentials)}") from None
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):  # a file, an empty or broken directory
        raise SourceError(f"{what} failed: the cached mirror {str(target)!r} is not a Git repository; delete it "
                          "and the next pass fetches again") from None
    except (git.GitError, OSError, ValueError) as err:
        raise SourceError(f"{what} failed: {_scrub(redact(str(err)), credentials)}") from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return repo, True


def _failure(err, url: str, credentials: Credentials | None, commit_ref: str | None, timeout: float,
             quiet: bool) -> str:
    """What a failed Git command (``err``) means, in one line for a report: Git's own words,
    redacted, or a plain sentence for the failures that have one. ``quiet``: the remote is one a
    commit named (a submodule), so nothing it wrote is repeated (issue 42: the error body of any
    URL came back in the report, status and page), only Git's verdict in fixed words
    (``_short``)."""
    text = (err.stderr or str(err)).replace("stderr: ", "").strip()
    if len(text) > 1 and text[0] == text[-1] == "'":  # GitPython quotes Git's stderr: 'fatal: ...'
        text = text[1:-1]
    lines = text.splitlines()
    detail = said = redact("; ".join(line.strip()[:300] for line in lines if line.strip())[:1000], url)
    if getattr(err, "cancelled", False):
        detail = "interrupted: the agent is shutting down"
    elif "couldn't find remote ref HEAD" in detail:
        detail = ("the repository's HEAD names no branch that exists (an empty repository with no commit, or "
                  f"its default branch was deleted); push a commit, or set its default branch ({detail})")
    elif commit_ref and "not our ref" in detail:
        detail = (f"commit {commit_ref} is on no branch or tag of the remote, and the remote would not send it "
                  "by itself (it does not have it, or refuses commits it does not advertise; Git said: not our ref)")
    elif _refused(detail):
        detail = _refused(detail, credentials)
    elif credentials and credentials.token and (moved := _REDIRECTED.search(detail)):
        detail = (f"the server answered with a redirect (HTTP {moved.group(1)}); with a token the agent follows "
                  "no redirect, so the token cannot be taken to another host: set the URL to the one the "
                  "repository has now")
    elif err.status == -9 or getattr(err, "timed_out", False) or "timed out" in detail.lower() or not detail:
        detail = f"no answer within {timeout:g}s"
    if quiet and detail == said:
        detail = _short(said)
    return detail


_SHORT = (("transport 'file' not allowed", "transport 'file' not allowed"),
          ("not allowed", "Git does not allow this URL's transport"),
          ("not our ref", "the remote does not send this commit (it does not have it, or does not send commits it "
                          "does not advertise)"),
          ("Could not resolve", "the host name could not be resolved"),
          ("Failed to connect", "could not connect"), ("Connection refused", "could not connect"),
          ("SSL", "the TLS connection failed"), ("certificate", "the TLS connection failed"),
          ("Host key verification failed", "SSH host key verification failed"),
          ("Permission denied", "SSH authentication failed"))


def _short(detail: str) -> str:
    """Git's verdict on a remote in fixed words, nothing the remote itself wrote: the HTTP status
    (``HTTP 404``), or one of ``_SHORT``'s sentences, else that it did not answer as a Git
    repository."""
    status = _HTTP_STATUS.search(detail)
    if status:
        return f"the server answered HTTP {status.group(1)}"
    return next((words for needle, words in _SHORT if needle in detail),
                "the remote did not answer as a Git repository")


def _remove_stale_locks(mirror: Path) -> None:
    """Remove the lock files a Git process killed with SIGKILL left in ``mirror`` (the whole pod
    killed for memory, a kill -9 of the process group): Git removes them itself on SIGTERM, but
    one left behind makes every later fetch fail with ``cannot lock ref``. Called with the cache
    directory's lock held (``cachedir.locked``), which every fetch into a mirror holds, so no
    live Git writes to it: each lock file there is stale. Never raises."""
    names = ["HEAD.lock", "packed-refs.lock", "config.lock", "shallow.lock", "FETCH_HEAD.lock"]
    found = [mirror / name for name in names]
    try:
        found += list((mirror / "refs").rglob("*.lock"))
    except OSError:
        pass
    for lock in found:
        try:
            lock.unlink()
        except OSError:
            pass


_HTTP_STATUS = re.compile(r"The requested URL returned error: (\d{3})")
_REDIRECTED = re.compile(r"The requested URL returned error: (30[1278])")
_AUTH_FAILED = re.compile(r"could not read (Username|Password) for|Authentication failed for|"
                          r"The requested URL returned error: (401|403)")


def _refused(detail: str, credentials: Credentials | None = None) -> str | None:
    """What Git's words for an HTTP 401 or 403 mean, or None when ``detail`` is not one: the
    server refused the credentials sent, or asked for some and none were sent. Git says "could
    not read Username" for a 401 (it would prompt, and prompts are off) whether or not a token
    went with the request. Never holds a secret: neither the token nor the user (a token can be
    written as the URL's user)."""
    found = _AUTH_FAILED.search(detail)
    if not found:
        return None
    status = found.group(2) or "401"
    if credentials and credentials.token:
        return (f"the server refused the credentials (HTTP {status}): check the token (--git-token-file, "
                "GITOPS_AGENT_GIT_TOKEN or the password in the URL), its access to this repository and "
                "the user (--git-username, default git)")
    return (f"the server asks for credentials (HTTP {status}) and none were sent: give a token with "
            "--git-token-file or GITOPS_AGENT_GIT_TOKEN (it is sent only to --repo's own scheme, host and port)")


def remote_head_branch(url: str, timeout: float = 60.0, *, credentials: Credentials | None = None) -> str | None:
    """The branch the remote's HEAD points at (``main`` for ``ref: refs/heads/main``), from
    ``git ls-remote --symref URL HEAD``; ``url`` and ``credentials`` as for ``fetch``, ``timeout``
    in seconds. None when the remote does not say (a detached HEAD, a transport without symrefs)
    or cannot be reached; never raises for Git faults."""
    url, credentials = effective(url, credentials)
    if plain_http_refused(url, credentials):
        return None
    try:
        listed = gitproc.run(["ls-remote", "--symref", url, "HEAD"], cwd=None, env=_git_env(timeout, credentials),
                             timeout=timeout)
    except (gitproc.Failed, OSError, ValueError):
        return None
    for line in listed.splitlines():
        target, _, name = line.partition("\t")
        if name == "HEAD" and target.startswith("ref: refs/heads/"):
            return target[len("ref: refs/heads/"):]
    return None


def _scrub(text: str, credentials: Credentials | None) -> str:
    """``text`` without the token of ``credentials`` in any form (``redaction.forms``)."""
    if credentials and credentials.token:
        text = redaction.scrub(text, [credentials.token], [credentials.username])
    return text


def _has(repo: git.Repo, sha: str, timeout: float = gitproc.LOCAL_TIMEOUT) -> bool:
    """True when ``repo`` holds the commit ``sha``. Raises ``gitproc.Failed`` when Git was cut
    short (its timeout, shutdown): that says nothing about the commit."""
    try:
        gitproc.run(["cat-file", "-e", f"{sha}^{{commit}}"], cwd=repo.git_dir, timeout=timeout)
        return True
    except gitproc.Failed as err:
        if err.status is None:
            raise
        return False


def _fetch_unlisted(repo: git.Repo, ref: str | None, env: dict[str, str], timeout: float, what: str) -> None:
    """When ``ref`` is a commit SHA (not a branch or tag name) that no fetched branch or tag
    contains (a deleted branch's commit, one only under ``refs/pull/N/head``, one the remote
    does not advertise), fetch it by itself from the remote into ``refs/pinned/``. Asked for on
    every fetch, not read from what an older fetch left in the mirror: a fresh mirror and a warm
    one give the same commit or the same error (except that Git downloads nothing for a commit the
    mirror holds, so one the remote has since lost still reads). An abbreviated SHA cannot be
    asked for: SourceError telling to give the full one. Raises ``gitproc.Failed`` when the
    remote does not send it (Git's "not our ref")."""
    if not ref or not _SHA.match(ref) or any(_commit(repo, f"{prefix}{ref}", timeout)
                                             for prefix in ("refs/remotes/origin/", "refs/tags/")):
        return  # not a SHA, or the name of a branch or tag
    full = _commit(repo, ref, timeout)
    if full and gitproc.run(["for-each-ref", "--contains", full, "--count=1", "refs/remotes/origin/", "refs/tags/"],
                            cwd=repo.git_dir, timeout=timeout).strip():
        return
    if len(ref) < 40:
        raise SourceError(f"{what} failed: commit {ref!r} is on no branch or tag of the remote, and an "
                          "abbreviated SHA cannot be fetched by itself; give the full 40-character SHA")
    gitproc.run(["fetch", "--no-tags", "origin", f"+{ref}:refs/pinned/{ref}"], cwd=repo.git_dir, env=env,
                timeout=timeout)


def _commit(repo: git.Repo, name: str, timeout: float = gitproc.LOCAL_TIMEOUT) -> str | None:
    """Full SHA of the commit ``name`` names in ``repo``, or None. Raises ``gitproc.Failed``
    when Git was cut short (``timeout`` seconds, shutdown)."""
    try:
        return gitproc.run(["rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"], cwd=repo.git_dir,
                           timeout=timeout).strip() or None
    except gitproc.Failed as err:
        if err.status is None:
            raise
        return None


def _unchanged(repo: git.Repo, ref: str | None, known: str, timeout: float, env: dict[str, str]) -> bool:
    """True when the remote's ``ref`` still points at ``known`` and the mirror holds it."""
    if not _has(repo, known, timeout):
        return False
    if ref and _SHA.match(ref) and known.startswith(ref):
        return True
    names = ["HEAD"] if not ref else [f"{ref}^{{}}", ref] if ref.startswith(FULL_REF_PREFIXES) else [
        f"refs/heads/{ref}", f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}"]
    listed = gitproc.run(["ls-remote", "origin", *([ref] if ref else ["HEAD"])], cwd=repo.git_dir, env=env,
                         timeout=timeout)
    remote = dict(reversed(line.split("\t", 1)) for line in listed.splitlines() if "\t" in line)
    return next((remote[n] for n in names if n in remote), None) == known


def resolve(repo: git.Repo, ref: str | None, url: str = "", timeout: float = gitproc.LOCAL_TIMEOUT) -> str:
    """Full SHA of the commit ``ref`` names in a fetched mirror: branch, then tag, then SHA; a
    full ref name (``refs/heads/main``, ``refs/tags/v1``, as Git, Flux's ``spec.ref.name`` and
    push webhooks write them) names exactly that branch or tag. Raises SourceError when it names
    none, or when Git was cut short (``timeout`` seconds, shutdown)."""
    if ref and ref.startswith("refs/heads/"):
        candidates = [f"refs/remotes/origin/{ref.removeprefix('refs/heads/')}"]
    elif ref and ref.startswith("refs/tags/"):
        candidates = [ref]
    else:
        candidates = ["refs/remotes/origin/HEAD"] if not ref else [
            f"refs/remotes/origin/{ref}", f"refs/tags/{ref}", *([ref] if _SHA.match(ref) else [])]
    for candidate in candidates:
        try:
            found = _commit(repo, candidate, timeout)
        except gitproc.Failed as err:
            raise (Interrupted if err.cancelled else SourceError)(
                f"resolving {ref or 'HEAD'!r} in the mirror of {redact(url)} failed: "
                f"{'interrupted: the agent is shutting down' if err.cancelled else f'no answer within {timeout:g}s'}"
            ) from None
        if found:
            return found
    raise SourceError(f"ref {ref or 'HEAD'!r} is not a branch, tag or commit of {redact(url)}")
