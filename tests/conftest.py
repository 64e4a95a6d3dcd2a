"""Shared fixtures: the real local control plane, fresh namespaces, real Git repositories and
the agent run as a user types it.

Set ``GITOPS_AGENT_TEST_STATE_DIR`` to the state directory of a control plane started with
``python -m tests.cluster up`` to reuse it across test runs; otherwise the session starts its own
and stops it at the end.

With pytest-xdist (``make test`` runs ``-n N``) every worker is such a session: it starts a
control plane of its own (a few seconds; an idle one costs about 2 % of a core) and runs its
tests one after another against it, each in fresh namespaces that are gone before the next test
starts, as in a run without workers. Workers never share a control plane, because the agent
works cluster-wide: every pass lists all Applications and children, gives children to every
hand-applied Application, notes every look-alike and prunes children whose Application is gone,
and ``run``'s watches see every Application; two tests in one cluster would see each other's
objects in their summaries, pass counts and the API server's write counters.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests import cluster as cluster_mod
from tests.support import Agent, GitRepo, established, wait_for

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    workers = getattr(config.option, "numprocesses", None) or 0
    if os.environ.get("GITOPS_AGENT_TEST_STATE_DIR") and not hasattr(config, "workerinput") and \
            (workers == "auto" or workers == "logical" or int(workers) > 1):
        raise pytest.UsageError("GITOPS_AGENT_TEST_STATE_DIR names one control plane, which xdist workers would "
                                "share (tests/conftest.py says why they must not): run with -n 0 or -n 1")


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """A running control plane (tests.cluster.Cluster) for the whole session."""
    reuse = os.environ.get("GITOPS_AGENT_TEST_STATE_DIR")
    if reuse:
        yield cluster_mod.attach(reuse)
        return
    state = tmp_path_factory.mktemp("cluster")
    started = time.monotonic()
    running = cluster_mod.up(state)
    print(f"\ncontrol plane ready in {time.monotonic() - started:.1f}s", file=sys.stderr)
    try:
        yield running
    finally:
        cluster_mod.down(state)


@pytest.fixture(scope="session")
def api(cluster):
    """``kubernetes.client.ApiClient`` configured only from the cluster's kubeconfig."""
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=configuration)
    with client.ApiClient(configuration) as api_client:
        yield api_client


@pytest.fixture(scope="session")
def crd(cluster):
    """The Application CRD from ``crd.yaml``, installed and Established."""
    established(cluster, ROOT / "crd.yaml", "applications.heumsi.github.io")
    return "applications.heumsi.github.io"


@pytest.fixture
def namespaces(cluster, api):
    """Factory of fresh namespaces (``new()`` returns a name); all are deleted after the test
    and the fixture waits until they are gone, so tests never see each other's objects."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(api)

    def gone(name: str) -> bool:
        """The namespace no longer exists (read through the API: a kubectl process per poll
        would cost more CPU than the rest of the wait)."""
        try:
            core.read_namespace(name)
        except ApiException as err:
            if err.status == 404:
                return True
            raise
        return False

    created: list[str] = []

    def new(prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        cluster.kubectl("create", "namespace", name)
        created.append(name)
        return name

    yield new
    for name in created:
        cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)
        # The namespace controller starts 5 s after the deletion; pods still terminating then cost
        # it a second round 5 s later (about 11 s in all, 6 s without). Deleted now, at once (a
        # namespace being deleted takes no new pods), they are gone before its first round.
        try:
            core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        except ApiException as err:
            if err.status != 404:
                raise
    for name in created:
        wait_for(lambda: gone(name), timeout=120, what=f"namespace {name} to be deleted")


@pytest.fixture
def namespace(namespaces):
    """One fresh namespace, deleted after the test."""
    return namespaces()


@pytest.fixture
def repo(tmp_path):
    """A real Git repository in a temporary directory (tests.support.GitRepo)."""
    return GitRepo.create(tmp_path / "repo")


@pytest.fixture
def agent(cluster, tmp_path):
    """Runs ``python -m agent`` as a subprocess against the cluster (tests.support.Agent)."""
    return Agent(kubeconfig=cluster.kubeconfig, cache_dir=tmp_path / "cache", cwd=ROOT)


@pytest.fixture
def objects(api):
    """Live objects as dicts (tests.support.Objects)."""
    from tests.support import Objects

    return Objects(api)
