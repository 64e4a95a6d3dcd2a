"""What ``explain`` reads of the cluster (``inspect.cluster_parts``): the Application's pods, and
the pods of its task runs that are not done, which never carry the Application's label."""

from agent.views import inspect


class Reads:
    """A cluster that answers each GET from ``answers`` (path -> {labelSelector or None: body})
    and records what was asked."""

    def __init__(self, answers: dict):
        self.answers, self.asked = answers, []

    def request(self, method, url, query=None):
        selector = (query or {}).get("labelSelector")
        self.asked.append((method, url, selector))
        return self.answers.get(url, {}).get(selector)


def app(tasks=None):
    return {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"image": "i", "port": 80},
            "status": {"tasks": tasks} if tasks is not None else {}}


def pod(name):
    return {"kind": "Pod", "metadata": {"name": name}}


def test_task_pods_are_read_only_for_runs_not_done():
    runs = [{"name": "migrate", "job": "web-migrate-3f2a9c1e", "phase": "Failed"},
            {"name": "seed", "job": "web-seed-7b7b7b7b", "phase": "Succeeded"},
            {"name": "warm", "job": "web-warm-9d9d9d9d", "phase": "Pending"}, "junk", {"name": "x", "phase": "Failed"}]
    assert inspect.task_pod_selector(app(runs)) == \
        "batch.kubernetes.io/job-name in (web-migrate-3f2a9c1e,web-warm-9d9d9d9d)"
    assert inspect.task_pod_selector(app([runs[1]])) is None
    assert inspect.task_pod_selector(app()) is None


def test_cluster_parts_adds_the_pods_of_the_runs_not_done_after_the_applications():
    pods_url = "/api/v1/namespaces/shop/pods"
    kube = Reads({pods_url: {"heumsi.github.io/application=web": {"items": [pod("web-1")]},
                             "batch.kubernetes.io/job-name in (web-migrate-3f2a9c1e)": {"items": [pod("web-migrate-x")]}}})
    _, pods, _ = inspect.cluster_parts(kube, app([{"name": "migrate", "job": "web-migrate-3f2a9c1e",
                                                    "phase": "Running"}]))
    assert [p["metadata"]["name"] for p in pods] == ["web-1", "web-migrate-x"]
    kube.asked.clear()
    _, pods, _ = inspect.cluster_parts(kube, app())
    assert [p["metadata"]["name"] for p in pods] == ["web-1"]
    assert [selector for _, url, selector in kube.asked if url == pods_url] == ["heumsi.github.io/application=web"]
