"""spec.placement, spec.terminationGracePeriodSeconds and spec.volumes rendered into every pod
template the agent makes (the Deployment, each schedule's CronJob, each task's Job), exactly and
in a stable order; none of it without the fields (byte for byte the template of before); the
spread only on the pods the Application's selector selects; the new pod fields owned in full
only while rendered."""

import json

import pytest

from agent.kinds import cronjob, deployment, fields, job, podspec, registry

BASE = {"image": "shop:1", "port": 8080, "replicas": 2,
        "files": {"/etc/shop/app.conf": {"content": "a=1"}},
        "schedules": {"report": {"schedule": "0 3 * * *", "args": ["report"]}},
        "tasks": {"migrate": {"args": ["migrate"]}}}
PLACEMENT = {"nodeSelector": {"pool": "web", "kubernetes.io/arch": "arm64"},
             "tolerations": [{"effect": "NoSchedule", "value": "web", "operator": "Equal", "key": "pool"},
                             {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                              "tolerationSeconds": 30}],
             "spreadAcross": ["node", "zone"], "priorityClassName": "high"}
VOLUMES = {"/var/cache/shop": {"emptyDir": {"sizeLimit": "1024Mi"}}, "/tmp": {"emptyDir": {"medium": "Memory"}}}
FULL = {**BASE, "placement": PLACEMENT, "terminationGracePeriodSeconds": 45, "volumes": VOLUMES}
SELECTED = {"app.kubernetes.io/instance": "shop", "heumsi.github.io/application": "shop"}


def pods(spec: dict) -> dict[str, dict]:
    """Kind -> the pod template spec of each pod-running child of ``spec``."""
    out = {}
    for child in registry.children("shop", "prod", "u", spec):
        if child["kind"] in ("Deployment", "Job"):
            out[child["kind"]] = child["spec"]["template"]["spec"]
        elif child["kind"] == "CronJob":
            out[child["kind"]] = child["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return out


def test_the_deployments_pod_renders_every_field_exactly_in_a_stable_order():
    pod = deployment.render("shop", "prod", "u", FULL)["spec"]["template"]["spec"]
    assert list(pod) == ["containers", "volumes", "nodeSelector", "tolerations", "topologySpreadConstraints",
                         "priorityClassName", "terminationGracePeriodSeconds"]
    assert json.dumps(pod["nodeSelector"]) == '{"kubernetes.io/arch": "arm64", "pool": "web"}'  # sorted
    assert json.dumps(pod["tolerations"]) == (  # as given, each in Kubernetes' field order
        '[{"key": "pool", "operator": "Equal", "value": "web", "effect": "NoSchedule"}, '
        '{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", '
        '"tolerationSeconds": 30}]')
    spread = {"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": SELECTED}}
    assert pod["topologySpreadConstraints"] == [{**spread, "topologyKey": "topology.kubernetes.io/zone"},
                                                {**spread, "topologyKey": "kubernetes.io/hostname"}]  # zone first
    assert list(pod["topologySpreadConstraints"][0]) == ["maxSkew", "topologyKey", "whenUnsatisfiable",
                                                         "labelSelector"]
    assert (pod["priorityClassName"], pod["terminationGracePeriodSeconds"]) == ("high", 45)
    file_volume, tmp, cache = pod["volumes"]
    assert file_volume["name"] == podspec.volume_name("/etc/shop/app.conf")
    assert tmp == {"name": podspec.scratch_name("/tmp"), "emptyDir": {"medium": "Memory"}}
    assert cache == {"name": podspec.scratch_name("/var/cache/shop"), "emptyDir": {"sizeLimit": "1Gi"}}  # as stored
    assert pod["containers"][0]["volumeMounts"][1:] == [
        {"name": podspec.scratch_name("/tmp"), "mountPath": "/tmp"},
        {"name": podspec.scratch_name("/var/cache/shop"), "mountPath": "/var/cache/shop"}]


def test_an_empty_toleration_value_is_left_out_as_the_api_server_stores_it():
    spec = {**BASE, "placement": {"tolerations": [{"key": "a", "operator": "Exists", "value": ""},
                                                  {"key": "b", "value": "", "tolerationSeconds": 0,
                                                   "effect": "NoExecute"}]}}
    pod = deployment.render("shop", "prod", "u", spec)["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"key": "a", "operator": "Exists"},
                                  {"key": "b", "effect": "NoExecute", "tolerationSeconds": 0}]


def test_a_volumes_name_never_is_a_files_name():
    assert podspec.scratch_name("/etc/a") != podspec.volume_name("/etc/a")
    assert podspec.scratch_name("/etc/a").startswith("scratch-") and len(podspec.scratch_name("/etc/a")) == 18


def test_the_spread_order_given_does_not_change_the_template():
    a = deployment.render("shop", "prod", "u", {**FULL, "placement": {**PLACEMENT, "spreadAcross": ["zone", "node"]}})
    assert a == deployment.render("shop", "prod", "u", FULL)


def test_every_pod_takes_the_placement_and_volumes_but_only_the_deployments_spreads():
    found = pods(FULL)
    assert sorted(found) == ["CronJob", "Deployment", "Job"]
    deployment_pod = found["Deployment"]
    for kind, pod in found.items():
        for field in ("nodeSelector", "tolerations", "priorityClassName", "terminationGracePeriodSeconds", "volumes"):
            assert pod[field] == deployment_pod[field], (kind, field)
        assert pod["containers"][0]["volumeMounts"] == deployment_pod["containers"][0]["volumeMounts"], kind
        assert ("topologySpreadConstraints" in pod) is (kind == "Deployment"), kind
    assert found["Job"]["restartPolicy"] == "Never"  # still last: the kinds add it after the template


def test_without_the_fields_every_child_renders_as_before():
    before = registry.children("shop", "prod", "u", BASE)
    text = json.dumps(before)
    for word in ("nodeSelector", "tolerations", "topologySpreadConstraints", "priorityClassName",
                 "terminationGracePeriodSeconds", "emptyDir", "scratch-"):
        assert word not in text, word
    assert registry.children("shop", "prod", "u", {**BASE, "placement": {}, "volumes": {}}) == before
    assert registry.children("shop", "prod", "u", {**BASE, "placement": {"nodeSelector": {}, "tolerations": [],
                                                                         "spreadAcross": []}}) == before


def test_a_tasks_digest_changes_with_its_pods_placement_and_only_then():
    plain = job.task_digest("shop", BASE, "migrate")
    assert job.task_digest("shop", {**BASE, "placement": {"spreadAcross": ["zone"]}}, "migrate") == plain
    assert job.task_digest("shop", {**BASE, "placement": {"nodeSelector": {"a": "b"}}}, "migrate") != plain
    assert job.task_digest("shop", {**BASE, "terminationGracePeriodSeconds": 5}, "migrate") != plain
    assert job.task_digest("shop", {**BASE, "volumes": {"/tmp": {"emptyDir": {}}}}, "migrate") != plain


POD = ("f:spec", "f:template", "f:spec")
CRON_POD = ("f:spec", "f:jobTemplate", "f:spec", "f:template", "f:spec")
OWNED = ("f:nodeSelector", "f:tolerations", "f:topologySpreadConstraints", "f:priorityClassName",
         "f:terminationGracePeriodSeconds")


@pytest.mark.parametrize("field", OWNED)
def test_the_new_pod_fields_are_owned_in_full_only_while_rendered(field):
    bare = deployment.render("shop", "prod", "u", BASE)
    placed = deployment.render("shop", "prod", "u", FULL)
    assert POD + (field,) not in fields.domains("Deployment", bare)  # a hand-set one stays, as before the field
    assert POD + (field,) in fields.domains("Deployment", placed)
    cron_bare = cronjob.render("shop", "prod", "u", BASE)[0]
    cron_placed = cronjob.render("shop", "prod", "u", FULL)[0]
    assert CRON_POD + (field,) not in fields.domains("CronJob", cron_bare)
    assert (CRON_POD + (field,) in fields.domains("CronJob", cron_placed)) is (field != "f:topologySpreadConstraints")


def test_volumes_are_never_owned_whole():
    placed = deployment.render("shop", "prod", "u", FULL)
    assert POD + ("f:volumes",) not in fields.domains("Deployment", placed)
    assert POD + ("f:volumes",) not in fields.AUTHORITATIVE["Deployment"]


def test_a_hand_added_node_selector_key_is_drift_only_under_placement():
    patched = {"f:spec": {"f:template": {"f:spec": {"f:nodeSelector": {}}}}}  # atomic: the whole map
    live = {**deployment.render("shop", "prod", "u", BASE), "metadata": {"name": "shop", "managedFields": [
        {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
         "fieldsV1": patched}]}}
    assert fields.foreign(live, deployment.render("shop", "prod", "u", BASE)) == {}
    assert fields.foreign(live, deployment.render("shop", "prod", "u", FULL)) == patched
