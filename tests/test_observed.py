"""Status says when it was true (issue 46 item 5), against the real control plane: every
Application's status carries ``observedAt`` (when the pass that last moved it observed it) and
``observedBy`` (``sync --once``, ``run``); ``get`` (json and table), ``kubectl get app`` and
``explain`` show it. Unit tests: tests/unit/engine/test_observed.py, tests/unit/views/."""

from __future__ import annotations

import datetime
import json
import sys

import pytest

from agent.common import rfc3339
from tests.support import app_yaml, wait_for
from tests.test_run import remote, start_agent  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("crd")


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def seen(doc: dict) -> tuple:
    status = doc.get("status") or {}
    return (status.get("health") or {}).get("status"), status.get("observedAt"), status.get("observedBy")


def test_sync_once_records_when_and_by_what_and_every_reader_shows_it(agent, repo, namespace, cluster):
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit()
    before = now().replace(microsecond=0)
    proc = agent.sync(repo.path, "--path", "apps", "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(agent.run([sys.executable, "-m", "agent", "get", "web", "-n", namespace, "-o", "json",
                                "--kubeconfig", str(agent.kubeconfig)]).stdout)
    health, at, by = seen(got)
    assert by == "sync --once" and before <= rfc3339.parse(at) <= now()
    assert health == "Progressing"  # the pass ended before the pods were ready: the status is as of then
    live = json.loads(cluster.kubectl("-n", namespace, "get", "app", "web", "-o", "json").stdout)
    assert seen(live) == (health, at, by)
    table = cluster.kubectl("-n", namespace, "get", "app").stdout.splitlines()
    assert table[0].split()[-3:] == ["OBSERVED", "AGE", "MESSAGE"]  # the printer column: kubectl's age of observedAt
    lines = agent.run([sys.executable, "-m", "agent", "get", "-n", namespace,
                       "--kubeconfig", str(agent.kubeconfig)]).stdout.splitlines()
    assert "   OBSERVED   " in lines[0] and " ago by sync --once   " in lines[1]
    text = agent.run([sys.executable, "-m", "agent", "explain", "web", "-n", namespace,
                      "--kubeconfig", str(agent.kubeconfig)]).stdout
    assert any(line.startswith("Health       Progressing, ") and line.endswith(" ago, by sync --once")
               for line in text.splitlines()), text

    proc = agent.sync(repo.path, "--path", "apps", "--namespace", namespace, "--wait=60s")
    assert proc.returncode == 0, proc.stderr
    health, later, by = seen(json.loads(cluster.kubectl("-n", namespace, "get", "app", "web", "-o", "json").stdout))
    assert (health, by) == ("Healthy", "sync --once") and rfc3339.parse(later) >= rfc3339.parse(at)
    proc = agent.sync(repo.path, "--path", "apps", "--namespace", namespace)  # nothing new: nothing written
    assert proc.returncode == 0, proc.stderr
    assert seen(json.loads(cluster.kubectl("-n", namespace, "get", "app", "web", "-o", "json").stdout)) == (
        "Healthy", later, "sync --once")


def test_run_records_that_it_observed(agent, start_agent, repo, remote, namespace, objects):
    repo.write("web.yaml", app_yaml("web"))
    remote.push()
    proc = agent.sync(remote.url, "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    assert seen(objects.app(namespace, "web"))[2] == "sync --once"
    start_agent(remote.url, "--interval", "300", "--namespace", namespace)  # watches: the rollout is news
    wait_for(lambda: seen(objects.app(namespace, "web"))[::2] == ("Healthy", "run"), timeout=60,
             what="run to record the ready Deployment")
