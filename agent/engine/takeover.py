"""Stage 5b of a pass: keep the selector of a Deployment taken over (``kinds.selector``).

Why after ``apply.claim``: a Deployment the seed's operator made (controller-owned by its
Application, without the agent's labels) or a hand-made one opted in is found by the claim's
lists, not by the pass's label-selected ones, so only then is its live selector known. Every
child of that Application whose selector follows (``selector.FOLLOWERS``) is rendered again
with the kept selector and decided again, so a later pass, when the rolling update is done,
finds it unchanged and writes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from agent.api.objects import Obj
from agent.engine import plan
from agent.kinds import deployment, selector

Render = Callable[[str], list[Obj]]
"""The desired children of the Application with the given key (``namespace/name``)."""


def kept_selectors(steps: list[plan.Step]) -> dict[str, dict[str, str]]:
    """Application key -> the selector labels its Deployment keeps (``selector.kept``), for each
    Deployment step that adopts a live object, or updates one an earlier take-over kept."""
    out: dict[str, dict[str, str]] = {}
    for step in steps:
        if step.identity[1] != deployment.KIND.kind or step.action != plan.Op.UPDATE:
            continue
        labels = selector.kept(step.live, step.desired, step.adopting)
        if labels is not None:
            out[plan.owner_key(step.target)] = labels
    return out


def keep_selectors(steps: list[plan.Step], render: Render) -> list[plan.Step]:
    """``steps`` with each follower of a kept selector rendered with it and decided again: an
    adoption stays one (its message says what was kept); the agent's own object is created,
    updated or unchanged as ``plan.decide`` finds; a conflict is left as it is."""
    found = kept_selectors(steps)
    if not found:
        return steps
    rendered: dict[str, dict[plan.Identity, Obj]] = {}
    out = []
    for step in steps:
        key = plan.owner_key(step.target)
        labels = found.get(key)
        if labels is None or step.identity[1] not in selector.FOLLOWERS or step.action in (plan.Op.CONFLICT,
                                                                                           plan.Op.PRUNE):
            out.append(step)
            continue
        if key not in rendered:
            rendered[key] = {plan.identity(obj): obj for obj in render(key)}
        want = rendered[key].get(step.identity)
        if want is None:
            out.append(step)
            continue
        desired = selector.keep(want, labels)
        if step.adopting:
            why = f"{step.why}; {selector.note(labels, step.live, desired)}" \
                if step.identity[1] == deployment.KIND.kind else step.why
            out.append(replace(step, desired=desired, why=why))
        else:
            out.append(plan.decide(desired, step.live))
    return out
