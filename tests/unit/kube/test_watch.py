"""The watch loop (``agent.kube.watch.run``) without a cluster: what it keeps between requests."""

import gc
import threading
import weakref

from agent.kube import watch


class Obj(dict):
    """A list item that a weak reference can follow."""


def test_a_watch_keeps_no_reference_to_a_list_it_handed_over(monkeypatch):
    refs, handed, alive = [], [], []
    stop = threading.Event()

    class Kube:
        def request(self, method, path, query=None, each=None):
            item = Obj(metadata={"name": "web", "namespace": "ns", "resourceVersion": "1"})
            refs.append(weakref.ref(item))
            return {"items": [item], "metadata": {"resourceVersion": "1"}}

        def throttle(self):
            pass

    def watch_once(*args):  # the store has replaced the listed object by now (a watch event)
        handed.clear()
        gc.collect()
        alive.append(refs[0]() is not None)
        stop.set()
        return "1", True
    monkeypatch.setattr(watch, "_opener", lambda kube, group, kind: None)
    monkeypatch.setattr(watch, "_watch_once", watch_once)
    watch.run(Kube(), "apps", "Deployment", None, lambda *a: None, stop,
              on_list=lambda kind, items, first: handed.append(items))
    assert alive == [False]
