"""The repository a local checkout stands for: its ``origin`` remote (issue 46, item 1).

Why: CI runs ``diff --repo "$GITHUB_WORKSPACE"`` (a checkout, given by path) against the cluster
that the in-cluster ``run --repo https://github.com/o/r`` syncs. Both read one repository, so they
must be one source: the same ``heumsi.github.io/source`` label and the same
``heumsi.github.io/repository`` annotation. Else every Application is held by another source
(``OwnershipConflict``) or, with a shared ``--source-id``, changed (its annotation differs).

The rule (``repository_of``): ``--repo`` given as a local path (not a URL, not ``file://``) of a
Git work tree or bare repository whose remote ``origin`` is set has the identity of that remote's
URL (``repository.identity``: credentials stripped, https, ssh and scp-like spellings equal).
The URL is the one Git fetches from (``git remote get-url``: ``url.<base>.insteadOf`` applied).
A relative local origin is taken from the checkout's directory. One hop only: a local origin
is that directory's real path, whatever its own origin is, so the checkout of a bare repository
is the same source as ``--repo file:///that/bare.git`` or ``--repo /that/bare.git``.
A path with no ``origin`` (or not a Git repository at all) stays its absolute real path, as before.
Only the directory itself is asked: a plain directory inside another repository is not that
repository (``GIT_CEILING_DIRECTORIES``), as Git's own fetch from a path does not look upward.

A URL keeps its identity string exactly (no Git command runs): installs that give ``--repo`` as a
URL see no change on upgrade.
"""

from __future__ import annotations

import os

from agent.source import gitproc
from agent.source.repository import identity, remote

TIMEOUT = 10.0
"""Seconds ``git remote get-url`` may take: a local read of the repository's config."""
NO_SUCH_REMOTE = 2
"""``git remote get-url``'s exit status when the remote does not exist (``git help remote``)."""


def is_local_path(repo: str) -> bool:
    """True when ``repo`` (a ``--repo`` value) is a local path: not a remote URL, not a
    ``scheme://`` URL (``file://`` included: a URL, kept as given)."""
    text = repo.strip()
    return remote(text) is None and "://" not in text


def origin_url(path: str) -> str | None:
    """The URL Git fetches the ``origin`` remote of the repository at ``path`` from (its work tree
    or bare directory; never a directory above it), or None: no such remote, not a Git
    repository, or Git failed. Never raises. Asked again only when a config file it reads
    changed (``_configs``): ``run`` asks at every pass, and a Git process on a push's way to its
    apply is milliseconds (issue 48)."""
    top = os.path.realpath(path)
    if not os.path.isdir(top):
        return None
    configs = _configs(top)
    known = _ORIGINS.get(top)
    if configs is not None and known is not None and known[0] == configs:
        return known[1]
    env = {"GIT_CEILING_DIRECTORIES": os.path.dirname(top) or "/", "GIT_TERMINAL_PROMPT": "0"}
    try:
        url = gitproc.run(["remote", "get-url", "origin"], cwd=top, env=env, timeout=TIMEOUT).strip() or None
    except gitproc.Failed as err:
        if err.status != NO_SUCH_REMOTE or configs is None:
            return None  # not a repository, cut short: asked again
        url = None
    except OSError:
        return None
    if configs is not None:
        _ORIGINS[top] = (configs, url)
    return url


_ORIGINS: dict[str, tuple[tuple[bytes | None, ...], str | None]] = {}
"""Real path -> (the config files' contents, its origin URL): what ``origin_url`` last found."""


def _configs(top: str) -> tuple[bytes | None, ...] | None:
    """The contents of the files ``git remote get-url`` reads in ``top`` (its config and
    worktree config, the legacy ``remotes/origin`` and ``branches/origin`` files, the global and
    system configs: ``git help config``, FILES; ``git help remote``; None for one that is
    absent), or None when they cannot stand for the answer: no config of its own (``.git`` a
    file: a worktree's or submodule's, found elsewhere), ``GIT_DIR`` or ``GIT_COMMON_DIR`` set,
    a file unreadable, or one that includes others. Not seen: a system config at another
    prefix than ``/etc`` (Git built so)."""
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_COMMON_DIR"):
        return None
    dot = os.path.join(top, ".git")
    gitdir = dot if os.path.isdir(dot) else top
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = [os.path.join(gitdir, "config"), os.path.join(gitdir, "config.worktree"),
             os.path.join(gitdir, "remotes", "origin"), os.path.join(gitdir, "branches", "origin"),
             os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
             os.path.join(xdg, "git", "config"), os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
    found: list[bytes | None] = []
    for name in files:
        try:
            with open(name, "rb") as f:
                found.append(f.read(_MAX_CONFIG + 1))
        except FileNotFoundError:
            found.append(None)
        except OSError:
            return None
    if found[0] is None or any(c is not None and (len(c) > _MAX_CONFIG or b"include" in c.lower()) for c in found):
        return None
    return tuple(found)


_MAX_CONFIG = 1 << 16
"""Bytes of a config file ``_configs`` reads; a larger one is not kept (asked each time)."""


def repository_of(repo: str) -> tuple[str, str | None]:
    """``(identity, former)`` of a ``--repo`` value. ``identity``: what the agent records for it
    (the module docstring's rule); ``former``: the identity this agent recorded for it before
    the rule (the checkout's own real path) when that differs, else None. Never raises."""
    own = identity(repo)
    if not is_local_path(repo):
        return own, None
    url = origin_url(repo)
    if url is None:
        return own, None
    if is_local_path(url) and not os.path.isabs(url):
        url = os.path.join(own, url)
    found = identity(url)
    return (found, own) if found != own else (own, None)
