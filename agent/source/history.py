"""Read a fetched mirror's history: who made a commit, when and why, what it changed in one file.

For ``explain``: the commit an Application last synced and the one that last changed it are
shown with their author, date and subject, and the diff of that change for its file. Reads
only the bare mirror ``mirror.mirror`` brought up to date; never fetches by itself.
"""

from __future__ import annotations

import git

from agent.source.mirror import SourceError

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""The id of Git's empty tree: what a root commit's file is compared with."""
MAX_DIFF_CHARS = 20000
"""A diff longer than this is cut, with a line saying so (one screen, not a whole file)."""


def commit_info(repo: git.Repo, sha: str) -> dict:
    """``{"author": "Name <email>", "date": RFC 3339 author date, "subject": first line}`` of
    the commit ``sha`` in ``repo``. Raises SourceError when the mirror does not hold it."""
    try:
        text = repo.git.log("-1", "--format=%an <%ae>%x00%aI%x00%s", sha, "--")
    except git.GitCommandError:
        raise SourceError(f"commit {sha} is not in the mirror") from None
    author, date, subject = (text.split("\x00") + ["", "", ""])[:3]
    return {"author": author, "date": date, "subject": subject}


def file_diff(repo: git.Repo, sha: str, path: str) -> str:
    """The unified diff of ``path`` made by commit ``sha`` (against its first parent, or the
    empty tree for a root commit); ``""`` when the commit did not change the file. Cut at
    ``MAX_DIFF_CHARS``. Raises SourceError when the mirror does not hold the commit."""
    try:
        parents = repo.git.rev_list("--parents", "-n", "1", sha).split()[1:]
        text = repo.git.diff(parents[0] if parents else EMPTY_TREE, sha, "--", path)
    except git.GitCommandError:
        raise SourceError(f"commit {sha} is not in the mirror") from None
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS] + f"\n... (cut at {MAX_DIFF_CHARS} characters)"
    return text


def file_at(repo: git.Repo, sha: str, path: str) -> bytes | None:
    """The bytes of ``path`` in commit ``sha``; None when the commit has no such file."""
    try:
        return (repo.commit(sha).tree / path).data_stream.read()
    except (KeyError, ValueError, git.BadName):
        return None
