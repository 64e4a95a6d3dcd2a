"""The benchmark's workload: N Applications (replicas 0) in 10 namespaces, one file each, in a
real Git repository; and the same objects as kubectl and the plain loop apply them.

Layout: ``apps/part-P/PREFIX-K/app-NNNNN.yaml`` with K = i mod 10 and P = i mod 2, so
``--path apps`` is the whole workload and ``apps/part-0`` / ``apps/part-1`` are two disjoint
halves (the scale-out measurement). The objects for kubectl and the loop come from the agent's
own ``render`` module (the Applications as the agent applies them, their Deployments and
Services), so every client writes the same bodies.

Every round uses namespaces of its own (``PREFIX`` = ``bxyz1``, ``bxyz2``...): the API server's
NamespaceLifecycle admission looks a namespace up live (a GET) for every request in it for 30 s
after it was deleted, which would slow and inflate a round that reused the names. ``b`` + a
random run id + the round number, so no two runs share names either.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

NAMESPACE_COUNT = 10
IMAGE, CHANGED_IMAGE = "nginx:1.25", "nginx:1.26"
ROOT_PATH = "apps"
HALVES = ("apps/part-0", "apps/part-1")


def app_name(i: int) -> str:
    return f"app-{i:05d}"


def namespace_names(prefix: str) -> list[str]:
    return [f"{prefix}-{k}" for k in range(NAMESPACE_COUNT)]


def app_namespace(i: int, prefix: str) -> str:
    return f"{prefix}-{i % NAMESPACE_COUNT}"


def app_file(i: int, prefix: str) -> str:
    return f"{ROOT_PATH}/part-{i % 2}/{app_namespace(i, prefix)}/{app_name(i)}.yaml"


def app_document(i: int, prefix: str, image: str = IMAGE) -> dict:
    return {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": app_name(i), "namespace": app_namespace(i, prefix)},
            "spec": {"image": image, "replicas": 0, "port": 8080}}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(repo: Path, n: int, prefix: str) -> str:
    """A new Git repository at ``repo`` holding N Application files, committed; returns the
    commit SHA (the base every round resets to)."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "bench@example.com")
    _git(repo, "config", "user.name", "Bench")
    for i in range(n):
        target = repo / app_file(i, prefix)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(app_document(i, prefix), sort_keys=False))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"{n} Applications")
    return _git(repo, "rev-parse", "HEAD")


def change_one(repo: Path, prefix: str) -> str:
    """Commit a new image for the first Application; returns the new commit SHA."""
    (repo / app_file(0, prefix)).write_text(yaml.safe_dump(app_document(0, prefix, CHANGED_IMAGE), sort_keys=False))
    _git(repo, "commit", "-q", "-am", f"{app_name(0)}: {CHANGED_IMAGE}")
    return _git(repo, "rev-parse", "HEAD")


def set_image(repo: Path, i: int, prefix: str, image: str) -> str:
    """Commit ``image`` for Application ``i`` (the push-to-live step); returns the new commit SHA."""
    (repo / app_file(i, prefix)).write_text(yaml.safe_dump(app_document(i, prefix, image), sort_keys=False))
    _git(repo, "commit", "-q", "-am", f"{app_name(i)}: {image}")
    return _git(repo, "rev-parse", "HEAD")


def desired_applications(n: int, prefix: str, commit: str, source_id: str) -> list[dict]:
    """The Applications as the agent applies them from ``commit`` (its ``render`` module)."""
    from agent.kinds import render

    return [render.desired_application(app_document(i, prefix), commit, app_file(i, prefix), source_id)
            for i in range(n)]


def namespaces(prefix: str) -> list[dict]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespace_names(prefix)]


def children_of(live_apps: list[dict]) -> list[dict]:
    """Deployments and Services the agent renders for the live Applications (their uids)."""
    from agent.kinds import registry

    out = []
    for app in sorted(live_apps, key=lambda a: a["metadata"]["name"]):
        meta = app["metadata"]
        out += registry.children(meta["name"], meta["namespace"], meta["uid"], app["spec"])
    return out
