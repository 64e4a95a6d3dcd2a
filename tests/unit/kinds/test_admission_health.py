"""A Deployment's health names why its pods are not made (``ReplicaFailure``: FailedCreate) or
not placed (a pod's ``PodScheduled`` False: FailedScheduling), from objects the local control
plane served (tests/unit/kinds/fixtures/health) and edge tables."""

import copy
import datetime

import pytest

from agent.kinds import deployment, health as health_
from agent.kinds.health import Health, Status
from tests.unit.kinds.test_health import fixture

SCHEDULING = ("waiting for rollout to finish: 0 of 1 replicas available; FailedScheduling: 0/1 nodes are available: "
              "1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is "
              "not helpful for scheduling.")


def test_an_unschedulable_pod_is_named_with_its_deployment():
    live, pod = fixture("deployment-unschedulable"), fixture("pod-unschedulable")
    before = copy.deepcopy(live)
    assert deployment.waits_for_pods(live)
    seen = deployment.with_pods(live, [pod])
    assert deployment.health(seen) == Health(Status.PROGRESSING, SCHEDULING)
    assert live == before  # not changed
    assert deployment.health(health_.view(seen)) == deployment.health(seen)  # what a pass keeps of it


def test_a_replica_failure_is_named_without_pods_and_kept_whole_by_trim():
    live = fixture("deployment-replica-failure")
    assert not deployment.waits_for_pods(live)  # the Deployment says why itself: no pod read
    whole = deployment.health(live)
    trimmed = deployment.trim(copy.deepcopy(live))
    assert deployment.health(trimmed) == whole
    assert [c["type"] for c in trimmed["status"]["conditions"] if "message" in c] == ["ReplicaFailure"]


def deployment_with(conditions=(), **status):
    return {"kind": "Deployment", "metadata": {"name": "web", "generation": 1},
            "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, **status,
                       "conditions": [dict(zip(("type", "status", "reason", "message"), c)) for c in conditions]}}


@pytest.mark.parametrize("obj, message", [
    # a quota refusal during a rollout: still Progressing, the reason named
    (deployment_with([("ReplicaFailure", "True", "FailedCreate", 'pods "web-1" is forbidden: exceeded quota: q')],
                     replicas=1, updatedReplicas=1),
     'waiting for rollout to finish: 1 of 2 new replicas updated; FailedCreate: pods "web-1" is forbidden: '
     "exceeded quota: q"),
    # a FailedDelete keeps its own reason; a message over several lines is one line
    (deployment_with([("ReplicaFailure", "True", "FailedDelete", "a\n  b")], replicas=3, updatedReplicas=2,
                     availableReplicas=2),
     "waiting for rollout to finish: 1 old replicas pending termination; FailedDelete: a b"),
    # ReplicaFailure False (or gone) says nothing
    (deployment_with([("ReplicaFailure", "False", "FailedCreate", "old")], replicas=2, updatedReplicas=2,
                     availableReplicas=1),
     "waiting for rollout to finish: 1 of 2 replicas available"),
    # FailedCreate wins over an unschedulable pod: nothing placed before it is made
    (deployment_with([("ReplicaFailure", "True", "FailedCreate", "q"), ("PodScheduled", "False", "Unschedulable", "n")],
                     replicas=2, updatedReplicas=2, availableReplicas=1),
     "waiting for rollout to finish: 1 of 2 replicas available; FailedCreate: q"),
])
def test_progressing_names_the_reason(obj, message):
    assert deployment.health(obj) == Health(Status.PROGRESSING, message)


def test_past_the_deadline_it_is_degraded_with_the_reason():
    obj = deployment_with([("Progressing", "False", "ProgressDeadlineExceeded", 'ReplicaSet "web-1" has timed out '
                            "progressing."), ("ReplicaFailure", "True", "FailedCreate", "refused")])
    assert deployment.health(obj) == Health(Status.DEGRADED, 'Deployment web exceeded its progress deadline: '
                                                             'ReplicaSet "web-1" has timed out progressing.; '
                                                             "FailedCreate: refused")


def pod(name, *conditions):
    return {"metadata": {"name": name},
            "status": {"conditions": [dict(zip(("type", "status", "reason", "message"), c)) for c in conditions]}}


def test_with_pods_takes_the_first_unschedulable_pod_by_name_and_cuts_its_message():
    live = deployment_with(replicas=2, updatedReplicas=2, availableReplicas=0)
    pods = [pod("web-b", ("PodScheduled", "False", "Unschedulable", "b" * 2000)),
            pod("web-a", ("PodScheduled", "False", "Unschedulable", "a")), pod("web-c", ("PodScheduled", "True"))]
    assert deployment.health(deployment.with_pods(live, pods)).message.endswith("; FailedScheduling: a")
    cut = deployment.with_pods(live, pods[:1])["status"]["conditions"][-1]["message"]
    assert cut == "b" * deployment.MAX_MESSAGE
    assert deployment.with_pods(live, [pods[2], {"metadata": {}}, {"status": {"conditions": ["junk"]}}]) is live


@pytest.mark.parametrize("obj, waits", [
    (None, False),
    (deployment_with(replicas=2, updatedReplicas=2, availableReplicas=1), True),
    (deployment_with(replicas=2, updatedReplicas=2, availableReplicas=2), False),  # healthy: no read
    (deployment_with(replicas=1, updatedReplicas=1), True),  # pods still to be made
    (deployment_with(replicas=3, updatedReplicas=2, availableReplicas=1), True),  # old ones terminating
    (deployment_with([("ReplicaFailure", "True", "FailedCreate", "q")], replicas=2, updatedReplicas=2), False),
    ({**deployment_with(replicas=2, updatedReplicas=2), "metadata": {"name": "web", "generation": 2}}, False),
    ({**deployment_with(replicas=2, updatedReplicas=2), "spec": {"replicas": 2, "paused": True}}, False),
    ({**deployment_with(replicas=2, updatedReplicas=2), "metadata": {"name": "web", "generation": 1,
                                                                      "deletionTimestamp": "2026-01-01T00:00:00Z"}},
     False),
])
def test_waits_for_pods(obj, waits):
    assert deployment.waits_for_pods(obj) is waits


NOW = datetime.datetime(2026, 12, 6, 17, 0, 0, tzinfo=datetime.timezone.utc)


def container_pod(name, reason, restarts=0, ready="False", created="2026-12-06T16:58:00Z", message="why"):
    return {"metadata": {"name": name, "creationTimestamp": created},
            "status": {"conditions": [{"type": "Ready", "status": ready}],
                       "containerStatuses": [{"name": "web", "restartCount": restarts,
                                              "state": {"waiting": {"reason": reason, "message": message}}}]}}


@pytest.mark.parametrize("pod, found", [
    (container_pod("a", "ImagePullBackOff"), ("ImagePullBackOff", "container web: why")),
    (container_pod("a", "ErrImagePull"), ("ErrImagePull", "container web: why")),
    (container_pod("a", "InvalidImageName"), ("InvalidImageName", "container web: why")),
    (container_pod("a", "CreateContainerConfigError"), ("CreateContainerConfigError", "container web: why")),
    (container_pod("a", "CreateContainerError"), ("CreateContainerError", "container web: why")),
    (container_pod("a", "CrashLoopBackOff", restarts=2), None),  # may still come up
    (container_pod("a", "CrashLoopBackOff", restarts=3), ("CrashLoopBackOff", "container web: why")),
    (container_pod("a", "ContainerCreating"), None),  # waiting helps
    (container_pod("a", "ImagePullBackOff", ready="True"), None),  # a ready pod never fails
    (container_pod("a", "ErrImagePull", message="a\n " + "x" * 600), ("ErrImagePull", ("container web: a " + "x" * 600)[:512])),
])
def test_pod_failure(pod, found):
    assert deployment.pod_failure(pod) == found


def test_a_failure_is_progressing_within_its_grace_then_degraded_with_the_reason_first():
    live = deployment_with(replicas=2, updatedReplicas=1, availableReplicas=0)
    pods = [container_pod("web-b", "CrashLoopBackOff", restarts=5), container_pod("web-a", "ImagePullBackOff")]
    assert deployment.waits_for_pods(live)
    within = deployment.with_pods(live, pods, NOW, 150)  # created 16:58:00: 120 s ago
    assert deployment.health(within) == Health(Status.PROGRESSING, (
        "waiting for rollout to finish: 1 of 2 new replicas updated; ImagePullBackOff: container web: why "
        "(Degraded at 2026-12-06T17:00:30Z if it lasts)"))
    assert deployment.recheck_at(within, NOW, 15) == NOW + datetime.timedelta(seconds=30)  # the grace's end
    past = deployment.with_pods(live, pods, NOW, 120)
    assert deployment.health(past) == Health(Status.DEGRADED, "ImagePullBackOff: container web: why")
    assert deployment.recheck_at(past, NOW, 15) is None  # decided
    assert deployment.with_pods(live, pods) is live  # no clock: nothing judged
    assert "RolloutFailing" not in str(live)  # not changed


def test_a_rollout_with_nothing_named_is_looked_at_again_and_an_available_one_is_not():
    live = deployment_with(replicas=2, updatedReplicas=2, availableReplicas=1)
    assert deployment.recheck_at(deployment.with_pods(live, [], NOW), NOW, 15) == NOW + datetime.timedelta(seconds=15)
    done = deployment_with(replicas=2, updatedReplicas=2, availableReplicas=2)
    assert deployment.recheck_at(done, NOW, 15) is None


def test_failed_create_counts_from_the_conditions_transition():
    live = deployment_with([("ReplicaFailure", "True", "FailedCreate", 'pods "web-1" is forbidden: quota')],
                           replicas=1, updatedReplicas=1)
    live["status"]["conditions"][0]["lastTransitionTime"] = "2026-12-06T16:59:00Z"
    assert deployment.failed_create(live) and not deployment.waits_for_pods(live)
    assert deployment.health(deployment.with_pods(live, [], NOW, 60)) == \
        Health(Status.DEGRADED, 'FailedCreate: pods "web-1" is forbidden: quota')
    within = deployment.with_pods(live, [], NOW, 61)
    assert deployment.health(within).status == Status.PROGRESSING
    assert deployment.health(within).message.endswith("(Degraded at 2026-12-06T17:00:01Z if it lasts)")
    unparsable = copy.deepcopy(live)
    unparsable["status"]["conditions"][0]["lastTransitionTime"] = "soon"
    assert deployment.with_pods(unparsable, [], NOW, 60) is unparsable  # no grace from a stamp it cannot read


def test_fail_after_of_the_spec():
    assert deployment.fail_after(None) == deployment.fail_after({}) == 120
    assert deployment.fail_after({"rollout": {"failAfterSeconds": 30}}) == 30
    assert deployment.fail_after({"rollout": {"failAfterSeconds": True}}) == 120


def test_past_the_deadline_a_failure_in_its_grace_is_named_without_its_grace():
    live = deployment_with([("Progressing", "False", "ProgressDeadlineExceeded", "timed out")], replicas=1,
                           updatedReplicas=1)
    seen = deployment.with_pods(live, [container_pod("web-a", "ImagePullBackOff")], NOW, 600)
    assert deployment.health(seen) == Health(Status.DEGRADED, "Deployment web exceeded its progress deadline: timed "
                                                              "out; ImagePullBackOff: container web: why")
