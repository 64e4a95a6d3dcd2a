"""A kept selector: how a Deployment someone else made is taken over with no serving gap. Pure.

A Deployment's ``spec.selector`` is immutable. One made by the seed's kopf operator selects
``app: NAME``, one made by Helm or Argo CD selects its chart's labels; the agent renders
``render.selector_labels``. Recreating the Deployment with the agent's selector deletes its pods
before new ones are ready, and switching the Service's selector in the same pass leaves it with
no pod that matches: a serving gap (issue 45).

So the agent keeps the live selector (``kept``) and everything that selects the Application's
serving pods follows it (``keep``): the Deployment's selector, its pod labels (the agent's labels
plus the kept ones, which win, so the selector still matches the template), the Service's
selector, the PodDisruptionBudget's selector and the spread constraints' ``labelSelector``. The
pod template changes once, so the Deployment controller replaces the pods in one rolling update
with its own ``maxSurge`` and ``maxUnavailable``; the Service selects the old pods and the new
ones all along. The Deployment carries ``labels.KEPT_SELECTOR``, so every later pass renders the
same: this is a stable variant of a fresh sync, which ``explain`` shows. Only ``matchLabels`` can be kept (a Service's selector is a label map):
a live selector with ``matchExpressions`` is recreated as before.
"""

from __future__ import annotations

import copy

from agent.api.labels import APPLICATION_LABEL, KEPT_SELECTOR
from agent.api.objects import Obj

FOLLOWERS = ("Deployment", "Service", "PodDisruptionBudget")
"""The child kinds whose selector follows a kept one (``keep``)."""


def _labels(selector: object) -> dict[str, str] | None:
    """``matchLabels`` of a ``LabelSelector`` that has nothing else (None otherwise)."""
    if not isinstance(selector, dict) or set(selector) - {"matchLabels"} or selector.get("matchExpressions"):
        return None
    found = selector.get("matchLabels")
    if not isinstance(found, dict) or not found or not all(isinstance(v, str) for v in found.values()):
        return None
    return {str(k): v for k, v in found.items()}


def taken_over(live: Obj) -> bool:
    """True when the live Deployment ``live`` was taken over with its selector kept: it carries
    ``KEPT_SELECTOR``, or (that annotation removed by hand) its pod labels hold the agent's as
    well as the other selector, which only a take-over renders. The agent's own Deployment with
    another selector (an older rendering) has neither: it is recreated."""
    if KEPT_SELECTOR in ((live.get("metadata") or {}).get("annotations") or {}):
        return True
    name = ((live.get("metadata") or {}).get("labels") or {}).get(APPLICATION_LABEL)
    pod = ((((live.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {})
    return isinstance(name, str) and pod.get(APPLICATION_LABEL) == name


def kept(live: Obj | None, desired: Obj | None, adopting: bool = False) -> dict[str, str] | None:
    """The selector labels to keep when ``desired`` (the rendered Deployment) takes over ``live``
    (the Deployment in its slot; ``adopting``: the pass adopts it now, else it must carry
    ``KEPT_SELECTOR`` from an earlier take-over): the live ``matchLabels`` when they differ from
    the rendered ones. None when there is nothing to keep (no live object, the same selector, the
    agent's own Deployment never taken over, or a live selector that is not ``matchLabels`` only):
    then a different selector is recreated, as before."""
    if live is None or desired is None:
        return None
    if not adopting and not taken_over(live):
        return None
    have = _labels((live.get("spec") or {}).get("selector"))
    want = _labels((desired.get("spec") or {}).get("selector"))
    return have if have is not None and have != want else None


def keep(obj: Obj, labels: dict[str, str]) -> Obj:
    """A copy of the rendered child ``obj`` (a kind of ``FOLLOWERS``; any other is returned as is)
    whose selectors select ``labels`` (see the module docstring)."""
    if obj.get("kind") not in FOLLOWERS:
        return obj
    out = copy.deepcopy(obj)
    spec = out["spec"]
    if obj["kind"] == "Service":
        if "selector" in spec:
            spec["selector"] = dict(labels)
        return out
    spec["selector"] = {"matchLabels": dict(labels)}
    if obj["kind"] == "Deployment":
        meta = out["metadata"]
        meta["annotations"] = {**(meta.get("annotations") or {}), KEPT_SELECTOR: described(labels)}
    template = spec.get("template")
    if obj["kind"] == "Deployment" and isinstance(template, dict):
        meta = template.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), **labels}
        for constraint in (template.get("spec") or {}).get("topologySpreadConstraints") or []:
            constraint["labelSelector"] = {"matchLabels": dict(labels)}
    return out


def described(labels: dict[str, str]) -> str:
    """``app=web`` for the labels ``{"app": "web"}`` (sorted, comma-separated)."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _pod_labels(obj: Obj | None) -> dict[str, str]:
    """The pod template's labels of a Deployment (empty when it has none)."""
    meta = ((((obj or {}).get("spec") or {}).get("template") or {}).get("metadata") or {})
    found = meta.get("labels")
    return found if isinstance(found, dict) else {}


def note(labels: dict[str, str], live: Obj | None = None, desired: Obj | None = None) -> str:
    """What the report and the ``Adopted`` Event say of a kept selector; with the ``live``
    Deployment and the ``desired`` one (``keep``'s), also the pod labels its pods lose (another
    Service, a NetworkPolicy or a monitor may select them: ``spec.podLabels`` keeps them) and a
    ``Recreate`` strategy, which replaces the pods all at once."""
    text = (f"kept its selector {described(labels)} (immutable), so one rolling update replaces its pods "
            "and the Service selects the same pods")
    lost = sorted(set(_pod_labels(live)) - set(_pod_labels(desired)))
    if lost:
        text += f"; its pods lose the labels {', '.join(lost)} (not in Git: spec.podLabels keeps them)"
    strategy = ((((live or {}).get("spec") or {}).get("strategy") or {}).get("type"))
    if strategy == "Recreate" and ((desired or {}).get("spec") or {}).get("strategy") is None:
        text += "; its strategy is Recreate, which stops every pod first (spec.rollout sets a rolling update)"
    return text
