"""What the engine needs of the cluster (``Cluster``), and the base of every wrapper that
watches or refuses some of it on the way (``Wrapper``).

Why a Protocol: a pass talks to ``agent.kube.client.Kube`` through wrappers (``run`` records
what it wrote, ``diff`` what it would write, ``--allowed-namespaces`` refuses what is outside,
the progress bar counts); each used to forward everything else with ``__getattr__``, so what a
pass may ask of the cluster was written nowhere and a wrapper could hide a missing verb until
a pass called it. ``Cluster`` names every verb; ``Wrapper`` hands each one on explicitly.

``ApiError`` (and its ``NoConfiguration``) is what every verb raises, so it lives beside the
protocol: an engine typed against ``Cluster`` and a fake of it need nothing of ``client``.
``agent.kube.client`` re-exports both.
"""

from __future__ import annotations

import builtins
from contextlib import AbstractContextManager
from typing import Protocol


class ApiError(Exception):
    """An API call failed: ``status`` is the HTTP status (0 when no answer came), ``reason``
    the Kubernetes Status reason (e.g. NotFound, Conflict), ``message`` the server's text."""

    def __init__(self, status: int, reason: str, message: str, what: str = ""):
        self.status, self.reason, self.message, self.what = status, reason, message, what
        head = f"{status} {reason}".strip() if status else reason  # 0: no HTTP answer at all
        super().__init__(f"{what}: {head}: {message}" if what else f"{head}: {message}")


class NoConfiguration(ApiError):
    """No usable cluster configuration (``reason`` NoConfiguration, no HTTP answer): ``str()`` is
    ``WHAT: MESSAGE``, the reason in words, without the reason's name."""

    def __init__(self, message: str, what: str):
        super().__init__(0, "NoConfiguration", message, what)
        self.args = (f"{what}: {message}",)


class Cluster(Protocol):
    """The verbs of one pass (see ``Kube`` for each one's contract): reads (``get``, ``list``,
    ``list_in``, ``list_unscoped``, ``served``), writes (``apply``, ``create``, ``delete``, ``patch_managed_fields``,
    ``patch_annotations``, ``patch_status``, ``event``), ``take_warnings`` (what the API server's
    ``Warning`` headers said of this thread's writes), ``wait_gone``, ``sharing`` (a pass's
    scope for shared parts of live objects), ``concurrency`` (parallel writes allowed) and
    ``dry_run`` (writes are not kept)."""

    @property
    def concurrency(self) -> int: ...

    @property
    def dry_run(self) -> bool: ...

    def get(self, obj: dict) -> dict | None: ...

    def list(self, group: str, kind: str, label_selector: str | None = None) -> builtins.list[dict]: ...

    def list_in(self, group: str, kind: str, namespace: str,
                label_selector: str | None = None) -> builtins.list[dict]: ...

    def list_unscoped(self, group: str, kind: str) -> builtins.list[dict]: ...

    def served(self, group: str, version: str) -> set[str]: ...

    def sharing(self) -> AbstractContextManager: ...

    def apply(self, obj: dict, force: bool = True) -> dict: ...

    def create(self, obj: dict) -> dict: ...

    def delete(self, obj: dict, propagation: str = "Background") -> bool: ...

    def patch_managed_fields(self, obj: dict, entries: builtins.list[dict]) -> dict: ...

    def patch_annotations(self, obj: dict, annotations: dict[str, str | None]) -> dict: ...

    def wait_gone(self, obj: dict, timeout: float = 60.0, interval: float = 0.25) -> bool: ...

    def patch_status(self, obj: dict, status: dict) -> dict: ...

    def event(self, obj: dict, type_: str, reason: str, message: str) -> None: ...

    def take_warnings(self) -> builtins.list[str]: ...


class Wrapper:
    """A ``Cluster`` that hands every verb to the ``Cluster`` it wraps (``self._kube``); a
    subclass overrides the verbs it records, counts or refuses."""

    def __init__(self, kube: Cluster):
        self._kube = kube

    @property
    def concurrency(self) -> int:
        return self._kube.concurrency

    @property
    def dry_run(self) -> bool:
        return self._kube.dry_run

    def get(self, obj: dict) -> dict | None:
        return self._kube.get(obj)

    def list(self, group: str, kind: str, label_selector: str | None = None) -> builtins.list[dict]:
        return self._kube.list(group, kind, label_selector)

    def list_in(self, group: str, kind: str, namespace: str, label_selector: str | None = None) -> builtins.list[dict]:
        return self._kube.list_in(group, kind, namespace, label_selector)

    def list_unscoped(self, group: str, kind: str) -> builtins.list[dict]:
        return self._kube.list_unscoped(group, kind)

    def served(self, group: str, version: str) -> set[str]:
        return self._kube.served(group, version)

    def sharing(self) -> AbstractContextManager:
        return self._kube.sharing()

    def apply(self, obj: dict, force: bool = True) -> dict:
        return self._kube.apply(obj, force)

    def create(self, obj: dict) -> dict:
        return self._kube.create(obj)

    def delete(self, obj: dict, propagation: str = "Background") -> bool:
        return self._kube.delete(obj, propagation)

    def patch_managed_fields(self, obj: dict, entries: builtins.list[dict]) -> dict:
        return self._kube.patch_managed_fields(obj, entries)

    def patch_annotations(self, obj: dict, annotations: dict[str, str | None]) -> dict:
        return self._kube.patch_annotations(obj, annotations)

    def wait_gone(self, obj: dict, timeout: float = 60.0, interval: float = 0.25) -> bool:
        return self._kube.wait_gone(obj, timeout, interval)

    def patch_status(self, obj: dict, status: dict) -> dict:
        return self._kube.patch_status(obj, status)

    def event(self, obj: dict, type_: str, reason: str, message: str) -> None:
        self._kube.event(obj, type_, reason, message)

    def take_warnings(self) -> builtins.list[str]:
        return self._kube.take_warnings()
