"""CI and the in-cluster agent on one repository never fight (issue 46 item 2): commits only move
forward, and another writer that keeps undoing the agent's apply meets a growing wait. Real
control plane; a bare repository served by URL, a CI checkout of it with ``origin`` set, ``run``
on the URL with a long interval (its passes come from its watches), ``sync --once`` from the
checkout with the same source id."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from tests.support import api_writes, app_yaml, new_writes, wait_for
from tests.test_run import remote, start_agent  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("crd")


def image(objects, namespace: str) -> str | None:
    live = objects.deployment(namespace, "web")
    return live["spec"]["template"]["spec"]["containers"][0]["image"] if live else None


def replica_sets(objects, namespace: str) -> set[str]:
    return {rs.metadata.name for rs in objects.apps.list_namespaced_replica_set(namespace).items}


class Images(threading.Thread):
    """Every 100 ms, the Deployment's image, for ``seconds``."""

    def __init__(self, objects, namespace: str, seconds: float):
        super().__init__(daemon=True)
        self.objects, self.namespace, self.seconds, self.seen = objects, namespace, seconds, []

    def run(self) -> None:
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            self.seen.append(image(self.objects, self.namespace))
            time.sleep(0.1)


def git(cwd, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_ci_and_run_on_one_repository_only_move_forward(agent, repo, remote, start_agent, namespace, objects,
                                                        cluster, tmp_path):
    repo.write("web.yaml", app_yaml("web", image="nginx:1.26", namespace=namespace))
    first = remote.push()
    running = start_agent(remote.url, "--interval", "3600", "--namespace", namespace)
    wait_for(lambda: image(objects, namespace) == "nginx:1.26", timeout=60, what="run's first pass")
    checkout = tmp_path / "ci"
    git(tmp_path, "clone", "-q", remote.url, str(checkout))
    git(checkout, "config", "user.email", "ci@example.com")
    git(checkout, "config", "user.name", "CI")
    (checkout / "web.yaml").write_text(app_yaml("web", image="nginx:1.27", namespace=namespace))
    git(checkout, "commit", "-qam", "1.27")
    git(checkout, "push", "-q", "origin", "main")
    merged = git(checkout, "rev-parse", "HEAD")
    sets = replica_sets(objects, namespace)

    watch = Images(objects, namespace, 20)  # run is behind: its passes on the watch events must not go back
    watch.start()
    proc = agent.sync(checkout, "--namespace", namespace)  # the checkout is its origin: run's source
    assert proc.returncode == 0, proc.stderr
    watch.join()
    after = watch.seen[watch.seen.index("nginx:1.27"):]
    assert set(after) == {"nginx:1.27"}, f"the image went back: {watch.seen}"
    assert len(replica_sets(objects, namespace) - sets) == 1
    wait_for(lambda: running.metric("gitops_agent_passes_total", result="success") >= 2, timeout=30,
             what="run's pass at the merge")
    assert objects.app(namespace, "web")["metadata"]["annotations"]["heumsi.github.io/source-commit"] == merged

    git(checkout, "checkout", "-q", "--detach", first)  # CI runs an old pipeline again
    before = api_writes(cluster, resources=("applications", "deployments", "services"))
    proc = agent.sync(checkout, "--namespace", namespace)  # the checkout is its origin: run's source
    assert proc.returncode == 0, proc.stderr
    assert (f"nothing applied: the ref is at {merged[:12]}, and this pass's commit {first[:12]} would take the "
            f"cluster back from {merged[:12]}, which another writer applied") in proc.stdout + proc.stderr
    writes = new_writes(before, api_writes(cluster, resources=("applications", "deployments", "services")))
    assert {k: v for k, v in writes.items() if k[2] != "status"} == {}
    assert image(objects, namespace) == "nginx:1.27"

    git(checkout, "push", "-q", "-f", "origin", f"{first}:refs/heads/main")  # a deliberate rollback
    proc = agent.sync(remote.url, "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    assert image(objects, namespace) == "nginx:1.26"
    watch = Images(objects, namespace, 10)  # run, still at the merge, must not undo the rollback
    watch.start()
    watch.join()
    assert set(watch.seen) == {"nginx:1.26"}, watch.seen


def test_an_object_another_writer_keeps_changing_is_corrected_with_a_growing_wait(
        agent, repo, remote, start_agent, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web", image="nginx:1.27", replicas=2, namespace=namespace))
    remote.push()
    running = start_agent(remote.url, "--interval", "3600", "--namespace", namespace)
    wait_for(lambda: (objects.deployment(namespace, "web") or {}).get("spec", {}).get("replicas") == 2, timeout=60,
             what="run's first pass")
    told = lambda: len([e for e in objects.events(namespace)  # noqa: E731 (the agent's Events only)
                        if (e.get("source") or {}).get("component") == "gitops-agent"])
    events_before = told()
    before = api_writes(cluster, resources=("deployments",))
    end = time.monotonic() + 30
    edits = 0
    while time.monotonic() < end:  # 20 edits a second for 30 s
        cluster.kubectl("-n", namespace, "patch", "deployment", "web", "--type", "merge",
                        "-p", '{"spec":{"replicas":5}}', check=False)
        edits += 1
        time.sleep(0.05)
    writes = new_writes(before, api_writes(cluster, resources=("deployments",)))
    ours = sum(v for (verb, _, sub), v in writes.items() if sub == "" and verb in ("PATCH", "APPLY")) - edits
    assert ours <= 8, f"{ours} writes of the agent for {edits} edits: {writes}"
    assert told() - events_before <= 8
    assert " held=1" in running.output()  # the pass summary counts the correction held back
    wait_for(lambda: objects.deployment(namespace, "web")["spec"]["replicas"] == 2, timeout=200,
             what="the correction once the other writer stopped")


def test_a_leader_paused_past_its_lease_writes_nothing_when_it_resumes(start_agent, repo, remote, namespace,
                                                                        objects):
    import signal

    names = [f"app{i}" for i in range(20)]
    for name in names:
        repo.write(f"{name}.yaml", app_yaml(name, image="nginx:1", namespace=namespace))
    remote.push()
    flags = ["--interval", "1", "--namespace", namespace, "--leader-elect", "--lease-namespace", namespace,
             "--lease-duration", "6"]
    first = start_agent(remote.url, *flags, "--identity", "first", cache="cache-1")
    wait_for(lambda: first.metric("gitops_agent_leader") == 1, timeout=30, what="first to lead")
    second = start_agent(remote.url, *flags, "--identity", "second", cache="cache-2")
    images = lambda: {(objects.deployment(namespace, n) or {"spec": {"template": {"spec": {  # noqa: E731
        "containers": [{"image": None}]}}}})["spec"]["template"]["spec"]["containers"][0]["image"] for n in names}
    wait_for(lambda: images() == {"nginx:1"}, timeout=60, what="first sync")
    first.proc.send_signal(signal.SIGSTOP)  # paused, perhaps in a pass: it still believes it leads
    try:
        for name in names:
            repo.write(f"{name}.yaml", app_yaml(name, image="nginx:2", namespace=namespace))
        remote.push()
        wait_for(lambda: images() == {"nginx:2"}, timeout=90, what="the second replica to take over and sync")
        time.sleep(2)
    finally:
        first.proc.send_signal(signal.SIGCONT)
    seen = set()
    end = time.monotonic() + 15
    while time.monotonic() < end:
        seen |= images()
        time.sleep(0.1)
    assert seen == {"nginx:2"}, f"an image went back after the old leader resumed: {seen}"
    assert second.metric("gitops_agent_leader") == 1
    wait_for(lambda: first.proc.poll() is not None, timeout=30, what="the old leader to stop")
