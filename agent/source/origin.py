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


def is_local_path(repo: str) -> bool:
    """True when ``repo`` (a ``--repo`` value) is a local path: not a remote URL, not a
    ``scheme://`` URL (``file://`` included: a URL, kept as given)."""
    text = repo.strip()
    return remote(text) is None and "://" not in text


def origin_url(path: str) -> str | None:
    """The URL Git fetches the ``origin`` remote of the repository at ``path`` from (its work tree
    or bare directory; never a directory above it), or None: no such remote, not a Git
    repository, or Git failed. Never raises."""
    top = os.path.realpath(path)
    if not os.path.isdir(top):
        return None
    env = {"GIT_CEILING_DIRECTORIES": os.path.dirname(top) or "/", "GIT_TERMINAL_PROMPT": "0"}
    try:
        url = gitproc.run(["remote", "get-url", "origin"], cwd=top, env=env, timeout=TIMEOUT).strip()
    except (gitproc.Failed, OSError):
        return None
    return url or None


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
