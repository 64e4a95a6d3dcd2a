"""Field ownership: which fields of a live object other managers hold that the agent takes over
before it applies, so that its apply removes what Git does not have. Pure.

Why: server-side apply (SSA) keeps list entries and map keys that another field manager set,
even with ``force``. A port added with ``kubectl patch``, a port changed with ``kubectl edit`` or
a list rewritten by a client-side ``kubectl apply`` would survive every pass (or make every pass
fail: two Service ports named ``http``). As Flux's ``fluxcd/pkg/ssa`` does, the agent first hands
the fields those managers own *inside the parts of an object the agent renders in full* to its
own manager (a JSON patch of ``metadata.managedFields``); its next apply then drops them.

The record is ``metadata.managedFields``: a list of entries {manager, operation (Apply or
Update), apiVersion, time, fieldsType: FieldsV1, fieldsV1, subresource?}. ``fieldsV1`` is a trie
whose keys are ``f:<field>``, ``k:<json of the key fields>`` (an entry of a keyed list),
``v:<json value>`` (an entry of a set), ``i:<index>`` and ``.`` (the node itself); an empty
mapping is a leaf (Kubernetes' structured-merge-diff FieldsV1 format).
"""

from __future__ import annotations

import datetime
import json
from typing import Any, Callable, Iterable

from agent.api.labels import AGENT_NAME
from agent.api.objects import Obj
from agent.api.schema import KIND
from agent.kinds import registry

Path = tuple[str, ...]
"""A path of FieldsV1 keys, e.g. ``("f:spec", "f:ports")``."""


def _path(dotted: str) -> Path:
    return tuple(f"f:{part}" for part in dotted.split("."))


AUTHORITATIVE: dict[str, tuple[Path, ...]] = {
    **{k.kind: tuple(map(_path, k.authoritative)) for k in registry.CHILD_KINDS},
    KIND: (_path("spec"),),
}
"""Per kind, the subtrees the agent renders in full: everything in them that Git does not have
is removed (every container, every port and every field of them, every selector and pod
template label). Outside them only the fields the agent sets are corrected; labels,
annotations and other fields that people or controllers add are left alone."""

RELEASED: dict[str, tuple[Path, ...]] = {k.kind: tuple(map(_path, k.released)) for k in registry.CHILD_KINDS}
"""Per kind, the authoritative subtrees the agent owns only while its render sets them
(``ChildKind.released``: a Deployment's ``spec.replicas``)."""

RENDERED: dict[str, tuple[Path, ...]] = {
    **{k.kind: tuple(map(_path, k.rendered)) + (_path("metadata.annotations"),) for k in registry.CHILD_KINDS},
}
"""Per child kind, the subtrees in which every field the agent's apply owns must still be set by
its render, or the next apply removes it (``dropped``): ``ChildKind.rendered`` and the
annotations."""


def _sets(obj: Any, path: Path) -> bool:
    """True when ``obj`` (a desired object) sets the field at ``path`` (FieldsV1 ``f:`` keys)."""
    for key in path:
        if not isinstance(obj, dict) or key[2:] not in obj:
            return False
        obj = obj[key[2:]]
    return True


WHEN_RENDERED: dict[str, tuple[Path, ...]] = {k.kind: tuple(map(_path, k.whole_when_rendered))
                                               for k in registry.CHILD_KINDS}
"""Per kind, the authoritative subtrees the agent owns in full only while its render sets them
(``ChildKind.whole_when_rendered``: a pod template's ``securityContext``); unlike ``RELEASED``
ones, the agent's apply removes what it set there once its render stops setting it."""


def domains(kind: str, desired: Obj | None = None) -> tuple[Path, ...]:
    """The authoritative subtrees of ``kind`` for the desired object ``desired``: ``AUTHORITATIVE``
    less the released and ``WHEN_RENDERED`` ones ``desired`` does not set (None: all of them, as
    when nothing is known of what Git wants: the subtrees kept when an object is listed)."""
    conditional = RELEASED.get(kind, ()) + WHEN_RENDERED.get(kind, ())
    return tuple(d for d in AUTHORITATIVE.get(kind, ())
                 if desired is None or d not in conditional or _sets(desired, d))


KUBECTL_MANAGERS = frozenset({"kubectl", "kubectl-client-side-apply", "kubectl-edit", "kubectl-patch",
                              "kubectl-scale", "kubectl-set", "kubectl-label", "kubectl-annotate",
                              "kubectl-replace", "kubectl-create", "kubectl-rollout", "before-first-apply"})
"""Field managers kubectl uses (its server-side apply among them, operation Apply)."""

HANDED_OVER_SUBRESOURCES = frozenset({"", "scale"})
"""Subresources whose writes are hand edits of the object's spec (``kubectl scale``); writes
to ``status`` belong to controllers and are never taken."""


def eligible(entry: Obj) -> bool:
    """True when the agent takes fields over from this managedFields entry: any manager but
    the agent that wrote with an Update operation (kubectl edit/patch/scale, client-side
    apply, scripts) or one of kubectl's managers (``kubectl apply --server-side``), on the
    object itself or its scale subresource. Other controllers' server-side applies are left
    alone: they declare their intent as the agent does."""
    if entry.get("manager") == AGENT_NAME or entry.get("fieldsType", "FieldsV1") != "FieldsV1":
        return False
    if entry.get("subresource", "") not in HANDED_OVER_SUBRESOURCES:
        return False
    return entry.get("operation") == "Update" or entry.get("manager") in KUBECTL_MANAGERS


def _covered(path: Path, domains: Iterable[Path]) -> bool:
    return any(path[:len(d)] == d for d in domains)


def _leads_to(path: Path, domains: Iterable[Path]) -> bool:
    return any(len(d) > len(path) and d[:len(path)] == path for d in domains)


def split(trie: Obj, domains: tuple[Path, ...], at: Path = ()) -> tuple[Obj, Obj]:
    """Split a FieldsV1 trie into (inside, outside) the ``domains`` subtrees. A node emptied by
    the split is dropped rather than kept as a leaf (an empty mapping would claim the node)."""
    inside: Obj = {}
    outside: Obj = {}
    for key, sub in trie.items():
        here = at + (key,)
        if _covered(here, domains):
            inside[key] = sub
        elif sub and _leads_to(here, domains):
            sub_in, sub_out = split(sub, domains, here)
            if sub_in:
                inside[key] = sub_in
            if sub_out:
                outside[key] = sub_out
        else:
            outside[key] = sub
    return inside, outside


def merge(a: Obj, b: Obj) -> Obj:
    """Union of two FieldsV1 tries. A leaf merged with a subtree becomes the subtree plus
    ``.`` (the node itself stays owned)."""
    out = dict(a)
    for key, sub in b.items():
        if key not in out:
            out[key] = sub
        elif out[key] and sub:
            out[key] = merge(out[key], sub)
        elif out[key] or sub:
            out[key] = {".": {}, **(out[key] or sub)}
    return out


def foreign(live: Obj, desired: Obj | None = None) -> Obj:
    """The FieldsV1 trie of fields that eligible managers (see ``eligible``) own inside the
    authoritative subtrees of ``live`` (a dict as the API serves it, with managedFields) for
    ``desired`` (``domains``); empty when there is nothing to take over. A non-empty result is
    drift that the agent's apply removes once the fields are handed over."""
    return _owned_inside(live, eligible, desired)


def _owned_inside(live: Obj, which: Callable[[Obj], bool], desired: Obj | None = None) -> Obj:
    """The union of the FieldsV1 tries, cut to the authoritative subtrees of ``live``'s kind
    (``domains``), of the managedFields entries for which ``which(entry)`` is True."""
    domains_ = domains(live.get("kind", ""), desired)
    owned: Obj = {}
    for entry in live.get("metadata", {}).get("managedFields") or []:
        if which(entry):
            inside, _ = split(entry.get("fieldsV1") or {}, domains_)
            owned = merge(owned, inside)
    return owned


def declared_by_others(entry: Obj) -> bool:
    """True for a managedFields entry of another manager's server-side apply on the object
    itself: a controller declaring its intent (a mesh's sidecar, a metrics port), which the
    agent leaves alone and its apply cannot remove (``eligible`` is False for it)."""
    return (entry.get("manager") != AGENT_NAME and entry.get("operation") == "Apply"
            and not entry.get("subresource") and not eligible(entry))


def theirs(live: Obj, desired: Obj | None = None) -> Obj:
    """The FieldsV1 trie of fields that ``declared_by_others`` entries own inside the
    authoritative subtrees of ``live`` for ``desired``; empty when there are none."""
    return _owned_inside(live, declared_by_others, desired)


def without_theirs(live: Any, trie: Obj, desired: Any) -> Any:
    """``live`` (a node of an object as served) without the keyed list entries (``k:``) that
    ``trie`` (``theirs``) owns whole and ``desired`` (the same node as the agent renders it) has
    no entry for, at any depth (a port another controller declared in the agent's container):
    what the agent's apply leaves in place, so no drift. A copy; ``live`` is not changed. An
    entry whose key fields ``desired`` leaves to defaults counts as not desired only when every
    key field is given, so a doubt keeps the entry (and applies)."""
    if not trie:
        return live
    if isinstance(live, dict):
        out = dict(live)
        for key, sub in trie.items():
            name = key[2:]
            if key.startswith("f:") and sub and name in out:
                out[name] = without_theirs(out[name], sub, desired.get(name) if isinstance(desired, dict) else None)
        return out
    if not isinstance(live, list):
        return live
    nodes = []  # (key fields, trie node) of every keyed entry the trie names
    for key, sub in trie.items():
        if key.startswith("k:"):
            try:
                fields_of = json.loads(key[2:])
            except ValueError:
                continue
            if isinstance(fields_of, dict):
                nodes.append((fields_of, sub))
    wanted = desired if isinstance(desired, list) else []

    def is_entry(item: Any, key_fields: Obj) -> bool:
        return isinstance(item, dict) and all(item.get(f) == v for f, v in key_fields.items())

    def desired_entry(key_fields: Obj) -> Any:  # by the fields desired sets: defaults unknown
        return next((d for d in wanted if isinstance(d, dict) and all(d.get(f, v) == v for f, v in key_fields.items())),
                    None)

    entries: list[Any] = []
    for item in live:
        matched = [(k, sub) for k, sub in nodes if is_entry(item, k)]
        if any("." in sub and desired_entry(k) is None for k, sub in matched):
            continue  # theirs whole, and Git has no such entry
        for k, sub in matched:  # an entry Git has: set aside what they declared inside it
            item = without_theirs(item, sub, desired_entry(k))
        entries.append(item)
    return entries


def handover(live: Obj, api_version: str, now: datetime.datetime | None = None,
             desired: Obj | None = None) -> list[Obj] | None:
    """The managedFields list for ``live`` after the fields that eligible managers own in the
    authoritative subtrees for ``desired`` (``domains``) are handed to the agent's Apply entry
    (created when missing, with ``api_version``); entries left with no fields are removed. None
    when nothing is to be taken. Send it as a JSON patch that replaces
    ``/metadata/managedFields``: the API server stores managedFields given explicitly in a
    request as they are."""
    entries, _ = _hand_over(live, domains(live.get("kind", ""), desired), eligible, api_version, now)
    return entries


def adoption(live: Obj, desired: Obj, now: datetime.datetime | None = None) -> tuple[list[Obj] | None, list[str]]:
    """``(managedFields, managers)`` for adopting ``live`` as the child ``desired``: every
    field the agent renders (``adoption_domains``) that any other manager owns on the object
    or its scale subresource, whatever its operation (another operator's create, kubectl, an
    earlier install's server-side apply), handed to the agent's Apply entry, as ``handover``
    does; ``managers``: the sorted names of the managers fields were taken from. The list is
    None when nothing is to be taken."""
    def other(entry: Obj) -> bool:
        return (not _ours(entry) and entry.get("fieldsType", "FieldsV1") == "FieldsV1"
                and entry.get("subresource", "") in HANDED_OVER_SUBRESOURCES)
    return _hand_over(live, adoption_domains(live, desired), other, desired["apiVersion"], now)


def adoption_domains(live: Obj, desired: Obj) -> tuple[Path, ...]:
    """The subtrees an adoption takes: the authoritative ones for ``desired`` (``domains``),
    each field ``desired`` sets elsewhere (a list whole, a mapping key by key), and under
    ``metadata.ownerReferences`` only the entries of ``live``'s controller references to an
    Application: the agent's apply then drops one that names an earlier Application's uid,
    and every other owner's reference stays."""
    out = list(domains(live.get("kind", ""), desired))
    body = {k: v for k, v in desired.items() if k not in ("apiVersion", "kind")}
    body["metadata"] = {k: v for k, v in (desired.get("metadata") or {}).items() if k != "ownerReferences"}
    out += _leaf_paths(body, ())
    refs = {r.get("uid") for r in (live.get("metadata") or {}).get("ownerReferences") or []
            if r.get("controller") and r.get("kind") == KIND}
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        for key in ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:ownerReferences") or {}:
            if key.startswith("k:") and _key_uid(key) in refs:
                out.append(("f:metadata", "f:ownerReferences", key))
    return tuple(dict.fromkeys(out))


def _leaf_paths(node: Obj, at: Path) -> list[Path]:
    """The paths of the fields a desired mapping sets: a non-empty mapping by its keys, any
    other value (a list, a scalar, an empty mapping) whole."""
    out: list[Path] = []
    for key, value in node.items():
        here = at + (f"f:{key}",)
        out += _leaf_paths(value, here) if isinstance(value, dict) and value else [here]
    return out


def _key_uid(key: str) -> str | None:
    """The ``uid`` of a FieldsV1 ``k:{"uid":...}`` key (an ownerReferences entry), or None."""
    try:
        fields_of = json.loads(key[2:])
    except ValueError:
        return None
    return fields_of.get("uid") if isinstance(fields_of, dict) else None


def _hand_over(live: Obj, subtrees: tuple[Path, ...], which: Callable[[Obj], bool], api_version: str,
               now: datetime.datetime | None) -> tuple[list[Obj] | None, list[str]]:
    """``(managedFields, managers)``: the fields that entries chosen by ``which(entry)`` own
    inside ``subtrees``, moved to the agent's Apply entry (see ``handover``); None and [] when
    there are none."""
    entries = live.get("metadata", {}).get("managedFields") or []
    taken: Obj = {}
    kept: list[Obj] = []
    names: set[str] = set()
    for entry in entries:
        if which(entry):
            inside, outside = split(entry.get("fieldsV1") or {}, subtrees)
            if inside:
                taken = merge(taken, inside)
                names.add(entry.get("manager") or "?")
                if outside:
                    kept.append({**entry, "fieldsV1": outside})
                continue
        kept.append(entry)
    if not taken:
        return None, []
    ours = next((i for i, e in enumerate(kept) if _ours(e)), None)
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    if ours is None:
        kept.append({"manager": AGENT_NAME, "operation": "Apply", "apiVersion": api_version, "time": stamp,
                     "fieldsType": "FieldsV1", "fieldsV1": taken})
    else:
        kept[ours] = {**kept[ours], "time": stamp, "fieldsV1": merge(kept[ours].get("fieldsV1") or {}, taken)}
    return kept, sorted(names)


def _ours(entry: Obj) -> bool:
    """True for the agent's own server-side apply entry on the object itself."""
    return entry.get("manager") == AGENT_NAME and entry.get("operation") == "Apply" and not entry.get("subresource")


def _all_set(node: Any, trie: Obj) -> bool:
    """True when every field ``trie`` (FieldsV1) names is set in ``node`` (a desired object or
    part of it): ``f:`` keys of mappings, ``k:`` entries of keyed lists (an entry that leaves a
    key field out matches: it is defaulted), ``v:`` values of sets; ``.`` and ``i:`` are not
    checked (the node itself is, by its parent)."""
    for key, sub in trie.items():
        if key.startswith("f:"):
            if not isinstance(node, dict) or key[2:] not in node:
                return False
            if sub and not _all_set(node[key[2:]], sub):
                return False
        elif key.startswith("k:"):
            try:
                fields_of = json.loads(key[2:])
            except ValueError:
                continue
            entry = next((e for e in node if isinstance(e, dict) and isinstance(fields_of, dict)
                          and all(e.get(f, v) == v for f, v in fields_of.items())), None) \
                if isinstance(node, list) else None
            if entry is None or (sub and not _all_set(entry, sub)):
                return False
        elif key.startswith("v:"):
            try:
                value = json.loads(key[2:])
            except ValueError:
                continue
            if not isinstance(node, list) or value not in node:
                return False
    return True


def dropped(live: Obj, desired: Obj) -> bool:
    """True when the agent's own apply entry of ``live`` owns a field, under its kind's
    ``RENDERED`` subtrees, that ``desired`` no longer sets (Git removed ``command``, an env
    variable, a probe's field, an Ingress annotation): the next apply removes it, so the object
    must be applied although every field ``desired`` sets has its value live. A released field
    (``RELEASED``) is handed back by ``release`` instead."""
    kind = live.get("kind", "")
    subtrees = RENDERED.get(kind)
    if not subtrees:
        return False
    for entry in live.get("metadata", {}).get("managedFields") or []:
        if _ours(entry):
            inside, _ = split(entry.get("fieldsV1") or {}, subtrees)
            kept, _ = _without(inside, _to_release(kind, desired))
            if not _all_set(desired, kept):
                return True
    return False


def _to_release(kind: str, desired: Obj) -> tuple[Path, ...]:
    """The released subtrees of ``kind`` that ``desired`` does not set."""
    return tuple(d for d in RELEASED.get(kind, ()) if not _sets(desired, d))


def _without(trie: Obj, paths: tuple[Path, ...]) -> tuple[Obj, bool]:
    """(``trie`` less the subtrees ``paths``, whether any was there)."""
    if not paths:
        return trie, False
    inside, outside = split(trie, paths)
    return outside, bool(inside)


def release(live: Obj, desired: Obj) -> list[Obj] | None:
    """The managedFields list for ``live`` with the released subtrees that ``desired`` does not
    set (a Deployment's ``spec.replicas`` once Git leaves it to an autoscaler) taken out of the
    agent's own apply entry: then nobody owns the field, its value stays, and the agent's apply
    without it no longer removes it (server-side apply removes only fields its manager owned).
    None when the agent owns none of them. Sent as ``handover``'s list is."""
    paths = _to_release(live.get("kind", ""), desired)
    if not paths:
        return None
    entries = live.get("metadata", {}).get("managedFields") or []
    out, changed = [], False
    for entry in entries:
        if _ours(entry):
            kept, had = _without(entry.get("fieldsV1") or {}, paths)
            if had:
                entry, changed = {**entry, "fieldsV1": kept}, True
        out.append(entry)
    return out if changed else None


def releasable(live: Obj, desired: Obj) -> bool:
    """True when ``release`` has something to hand back."""
    paths = _to_release(live.get("kind", ""), desired)
    return bool(paths) and any(_ours(e) and _without(e.get("fieldsV1") or {}, paths)[1]
                               for e in live.get("metadata", {}).get("managedFields") or [])


def applied_by_agent(obj: Obj) -> bool:
    """True when the agent's field manager has applied ``obj`` (an Apply entry of
    ``gitops-agent`` in managedFields): the record that labels copied from a rendered
    manifest, or a copy-pasted YAML, do not carry."""
    return any(e.get("manager") == AGENT_NAME and e.get("operation") == "Apply"
               for e in obj.get("metadata", {}).get("managedFields") or [])


KEPT_FOR_READERS: tuple[Path, ...] = (_path("metadata.annotations"),)
"""Subtrees of every entry that ``compact`` keeps besides the authoritative ones: who owns
each annotation (``suspend.set_by_hand`` reads the owner of ``heumsi.github.io/reconcile``)."""


def compact(obj: Obj) -> Obj:
    """``obj`` (a dict as the API serves it) with each ``metadata.managedFields`` entry's
    ``fieldsV1`` cut down to what the pass reads: ``KEPT_FOR_READERS``, and for an entry the
    agent takes fields over from (``eligible``) or another controller declared
    (``declared_by_others``) the authoritative subtrees of its kind (``foreign``, ``theirs``);
    every entry stays, with its manager, operation and subresource
    (``applied_by_agent``, ``eligible``). Modifies and returns ``obj``.

    About half of a listed object's memory is managedFields, and a pass holds every listed
    object; ``handover``, which rewrites the whole list, must be given the full object (a GET)."""
    kind = obj.get("kind", "")
    domains_ = AUTHORITATIVE.get(kind, ()) + KEPT_FOR_READERS
    ours = RENDERED.get(kind, ()) + KEPT_FOR_READERS
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        trie = entry.get("fieldsV1")
        if isinstance(trie, dict):
            keep = eligible(entry) or declared_by_others(entry)
            entry["fieldsV1"], _ = split(trie, domains_ if keep else ours if _ours(entry) else KEPT_FOR_READERS)
    return obj
