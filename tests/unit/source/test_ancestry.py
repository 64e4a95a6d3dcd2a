"""ancestry.is_ancestor: the few commits before the newer one read through the mirror's open
``cat-file``, Git's ``merge-base`` for the rest (issue 48); mirrorrepo: one Repo per mirror."""

import shutil
import subprocess

import pytest

from agent.source import ancestry, mirrorrepo


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def commit(path, name):
    (path / name).write_text(name)
    git("add", ".", cwd=path)
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", name, cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


@pytest.fixture
def history(tmp_path):
    """A repository with main: a - b - c - merge(c, side) and side: b - s; then 20 more on main."""
    work = tmp_path / "work"
    git("init", "-q", "-b", "main", str(work), cwd=tmp_path)
    a, b = commit(work, "a"), commit(work, "b")
    git("checkout", "-q", "-b", "side", cwd=work)
    s = commit(work, "s")
    git("checkout", "-q", "main", cwd=work)
    c = commit(work, "c")
    git("-c", "user.email=a@b", "-c", "user.name=a", "merge", "-q", "--no-edit", "side", cwd=work)
    merge = git("rev-parse", "HEAD", cwd=work)
    far = [commit(work, f"f{i}") for i in range(20)]
    git("checkout", "-q", "--orphan", "other", cwd=work)
    other = commit(work, "o")
    return work, dict(a=a, b=b, s=s, c=c, merge=merge, far=far[-1], other=other)


def test_a_near_ancestor_is_found_without_a_git_process(history, monkeypatch):
    work, c = history
    monkeypatch.setattr(ancestry.gitproc, "run", lambda *a, **k: pytest.fail("merge-base ran"))
    for older, newer in (("c", "merge"), ("s", "merge"), ("a", "merge"), ("b", "c")):
        assert ancestry.is_ancestor(work, c[older], c[newer]) is True, (older, newer)


def test_anything_else_is_merge_bases_answer(history):
    work, c = history
    assert ancestry._near(work, c["a"], c["far"]) is False  # more than NEAR_READS commits back
    assert ancestry.is_ancestor(work, c["a"], c["far"]) is True
    assert ancestry.is_ancestor(work, c["merge"], c["c"]) is False  # newer than it
    assert ancestry.is_ancestor(work, c["s"], c["c"]) is False  # another branch
    assert ancestry.is_ancestor(work, c["other"], c["merge"]) is False
    assert ancestry.is_ancestor(work, "f" * 40, c["merge"]) is None  # not there
    assert ancestry.is_ancestor(work, c["c"], "e" * 40) is None
    assert ancestry.is_ancestor(work, c["merge"], c["merge"]) is True
    assert ancestry._near(work, c["c"][:12], c["merge"]) is False  # full SHAs only
    tree = git("rev-parse", "HEAD^{tree}", cwd=work)
    assert ancestry._near(work, c["a"], tree) is False  # not a commit
    assert ancestry._near(tmp := work / "nowhere", c["a"], c["merge"]) is False and not tmp.exists()


def test_parents_are_read_from_the_header_only():
    body = (b"tree " + b"1" * 40 + b"\nparent " + b"2" * 40 + b"\nparent " + b"3" * 40 + b"\nauthor x\n\n"
            b"parent " + b"4" * 40 + b"\n")
    assert ancestry._parents(body) == ["2" * 40, "3" * 40]
    assert ancestry._parents(b"tree x\nparent nothex\n\n") == []


def test_a_mirror_is_opened_once_while_it_is_the_same_directory(tmp_path, monkeypatch):
    first = tmp_path / "m.git"
    git("init", "-q", "--bare", str(first), cwd=tmp_path)
    repo = mirrorrepo.opened(first)
    assert mirrorrepo.opened(str(first)) is repo
    shutil.rmtree(first)
    git("init", "-q", "--bare", str(first), cwd=tmp_path)  # the cache deleted and fetched again:
    mirrorrepo.forget(first)  # as the fetch that makes a mirror says (its inode may be the old one's)
    again = mirrorrepo.opened(first)
    assert again is not repo and mirrorrepo.opened(first) is again
    clock = [mirrorrepo.time.monotonic() + mirrorrepo.MAX_AGE + 1]
    monkeypatch.setattr(mirrorrepo.time, "monotonic", lambda: clock[0])
    fresh = mirrorrepo.opened(first)  # too old: opened afresh, once
    assert fresh is not again and mirrorrepo.opened(first) is fresh
    for i in range(mirrorrepo.KEPT):
        git("init", "-q", "--bare", str(tmp_path / f"o{i}.git"), cwd=tmp_path)
        mirrorrepo.opened(tmp_path / f"o{i}.git")
    assert mirrorrepo.opened(first) is not fresh  # the least recently used was closed
    with pytest.raises(Exception):
        mirrorrepo.opened(tmp_path / "missing")
    for path in [first, *(tmp_path / f"o{i}.git" for i in range(mirrorrepo.KEPT))]:
        mirrorrepo.forget(path)
    assert not [k for k in mirrorrepo._open if k[0].startswith(str(tmp_path.resolve()))]


def test_a_mirror_whose_cat_file_ended_is_opened_afresh(history):
    """GitPython does not start an ended ``cat-file`` again: every read through it would fail."""
    work, c = history
    repo = mirrorrepo.opened(work)
    assert ancestry._near(work, c["c"], c["merge"])  # starts the processes
    repo.git.cat_file_all.proc.kill()
    repo.git.cat_file_all.proc.wait()
    fresh = mirrorrepo.opened(work)
    assert fresh is not repo and ancestry._near(work, c["c"], c["merge"])
    mirrorrepo.forget(work)
