"""Progress of a pass on a terminal (``tqdm``), on stderr, so stdout stays the report.

Shown only when both stdout and stderr are terminals and ``--quiet`` was not given: in CI logs,
pipes (``-o json | jq``) and files there is never a progress bar.
"""

from __future__ import annotations

import sys

from tqdm import tqdm

from agent.engine import plan
from agent.kube.cluster import Wrapper


def enabled(quiet: bool, stdout=None, stderr=None) -> bool:
    """True when a progress bar should be drawn: not ``quiet`` and both streams are TTYs."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    return not quiet and _isatty(stdout) and _isatty(stderr)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Progress(Wrapper):
    """Wraps a ``Kube`` and counts its API calls on a bar: each list, apply, delete, create and
    status write ticks it and shows its subject. ``desc``: the bar's label (e.g. ``sync``);
    ``show``: draw it at all (see ``enabled``). Every other verb is the wrapped one's (``Wrapper``).
    Call ``close()`` when the pass ends (the bar is erased)."""

    def __init__(self, kube, desc: str, show: bool):
        self._kube = kube
        self.bar = tqdm(desc=desc, unit=" calls", file=sys.stderr, disable=not show, leave=False,
                        dynamic_ncols=True, bar_format="{desc}: {n_fmt} API calls [{elapsed}] {postfix}")
        if show:
            self.bar.set_postfix_str("fetching the repository")

    def _tick(self, what: str) -> None:
        self.bar.set_postfix_str(what, refresh=False)
        self.bar.update(1)

    def list(self, group, kind, *args, **kwargs):
        self._tick(f"listing {kind}s")
        return self._kube.list(group, kind, *args, **kwargs)

    def apply(self, obj, *args, **kwargs):
        self._tick(f"applying {plan.subject(plan.identity(obj))}")
        return self._kube.apply(obj, *args, **kwargs)

    def create(self, obj, *args, **kwargs):
        self._tick(f"creating {plan.subject(plan.identity(obj))}")
        return self._kube.create(obj, *args, **kwargs)

    def delete(self, obj, *args, **kwargs):
        self._tick(f"pruning {plan.subject(plan.identity(obj))}")
        return self._kube.delete(obj, *args, **kwargs)

    def patch_status(self, obj, *args, **kwargs):
        self._tick(f"status of {plan.subject(plan.identity(obj))}")
        return self._kube.patch_status(obj, *args, **kwargs)

    def close(self) -> None:
        self.bar.close()
        close = getattr(self._kube, "close", None)
        if close:
            close()
