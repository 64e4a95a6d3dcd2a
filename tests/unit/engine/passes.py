"""What the pass tests share: a real Git repository, the in-memory cluster and one pass of
``agent.engine.sync.run`` over them (``World``)."""

from __future__ import annotations

from pathlib import Path

import yaml

from agent.engine import sync
from agent.engine.report import Report
from tests.support import GitRepo
from tests.unit.fakecluster import FakeCluster

NS = "shop"


def app_yaml(name: str, image: str = "nginx:1.27", replicas: int = 1, port: int | None = 80,
             annotations: dict | None = None, **spec) -> str:
    """An Application document as a user writes it (namespace from ``Options.namespace``);
    ``port`` None: a worker, without one."""
    meta = {"name": name, **({"annotations": annotations} if annotations else {})}
    served = {"port": port} if port is not None else {}
    return yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": meta,
                           "spec": {"image": image, "replicas": replicas, **served, **spec}}, sort_keys=False)


class World:
    """A Git repository in ``tmp_path``, a ``FakeCluster`` and the ``Options`` of a pass over them.
    ``concurrency`` 1 (the default) keeps the order of ``kube.writes`` fixed."""

    def __init__(self, tmp_path: Path, concurrency: int = 1, **options):
        self.repo = GitRepo.create(tmp_path / "repo")
        self.kube = FakeCluster(concurrency=concurrency)
        self.opts = sync.Options(repo=str(self.repo.path), cache_dir=str(tmp_path / "cache"), namespace=NS, **options)

    def commit(self, files: dict[str, str | None], message: str = "change") -> str:
        """Write (or, for None, remove) ``files`` and commit; the new HEAD's SHA."""
        for path, text in files.items():
            if text is None:
                self.repo.remove(path)
            else:
                self.repo.write(path, text)
        return self.repo.commit(message)

    def sync(self, **kwargs) -> Report:
        """One pass (``sync.run``) with ``self.opts`` updated by ``kwargs`` that name options;
        the others go to ``run``. ``self.kube.writes`` holds this pass's writes alone."""
        fields = set(sync.Options.__dataclass_fields__)
        opts = self.opts.__class__(**{**self.opts.__dict__, **{k: v for k, v in kwargs.items() if k in fields}})
        self.kube.writes.clear()
        return sync.run(self.kube, opts, **{k: v for k, v in kwargs.items() if k not in fields})

    def app(self, name: str) -> dict | None:
        return self.kube.stored("Application", NS, name)

    def child(self, kind: str, name: str) -> dict | None:
        return self.kube.stored(kind, NS, name)

    def trio(self, name: str) -> tuple:
        return self.app(name), self.child("Deployment", name), self.child("Service", name)


def actions(report: Report) -> list[tuple[str, str]]:
    """(subject, action) of every change, in the report's order."""
    return [(c.subject, c.action) for c in report.changes]


def conditions(app: dict) -> dict[str, tuple]:
    """type -> (status, reason, message) of an Application's conditions."""
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in app["status"].get("conditions") or []}


def image(deployment: dict) -> str:
    return deployment["spec"]["template"]["spec"]["containers"][0]["image"]


def rolled_out(world: World, name: str) -> None:
    """The Deployment ``name`` as its controller leaves it once every replica is ready: its
    status written through the status subresource (as ``kube-controller-manager``)."""
    live = world.child("Deployment", name)
    replicas = live["spec"].get("replicas", 1)
    live["status"] = {"observedGeneration": live["metadata"]["generation"], "replicas": replicas,
                      "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
                      "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                                     {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}
    world.kube.put(live, manager="kube-controller-manager", subresource="status")
