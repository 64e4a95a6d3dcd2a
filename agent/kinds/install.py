"""What the install files say of each child kind, from the registry: the status fields the kinds
add to the CRD, and their RBAC rules in ``deploy/``. Pure.

A new kind adds its status fields (``ChildKind.status_schema``) and its REST resource
(``group``, ``plural``); ``make docs`` writes them into ``crd.yaml`` and the RBAC files
(``agent/cli/reference.py``: ``crd_text``, ``rbac_files``), and ``tests/unit/kinds/test_install.py``
fails when a committed copy differs. The RBAC files stay hand-written but for the lines between
``BEGIN`` and ``END``: one rule per API group of the child kinds, in ``CHILD_KINDS`` order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from agent.api.objects import Obj
from agent.kinds.kind import ChildKind
from agent.kinds.registry import CHILD_KINDS

CHILD_VERBS = ("get", "list", "watch", "create", "patch", "delete")
"""What the agent does to children: get (wait for a recreated child), list and watch (each pass
reads them; ``run`` watches them), create and patch (server-side apply), delete (prune)."""

READ_VERBS = ("get", "list", "watch")
"""What the agent itself does to children when it writes them as each namespace's tenant
(``--tenant-service-account``, as ``deploy/`` runs it): it only reads and watches them."""

TENANT_VERBS = ("get", "list", "create", "patch", "delete")
"""What the tenant ServiceAccount of a namespace does to children on the agent's behalf: its
writes (create and patch: server-side apply; delete: prune; get and list for the API server's
checks). No watch: the agent watches as itself."""

RBAC: dict[Path, tuple[str, ...]] = {
    Path("deploy", "rbac.yaml"): READ_VERBS,  # the agent's own ClusterRole: writes go as the tenant
    Path("deploy", "tenants.yaml"): TENANT_VERBS,  # each namespace's tenant Role
    # The namespaced Roles' component sets GITOPS_AGENT_WATCH=false: watches are cluster-wide.
    Path("deploy", "components", "namespaced-rbac", "roles.yaml"): ("get", "list"),
}
"""Each RBAC file with child rules, relative to the repository's root, and the verbs they grant."""

READS: tuple[tuple[str, str], ...] = (("batch", "jobs"),)
"""(group, plural) of what the agent reads besides the children, as itself: the schedules' Jobs
(a failed run, for ``status.schedules``; ``engine.livestate``)."""
READ_ONLY_VERBS = ("get", "list")
READERS = frozenset({Path("deploy", "rbac.yaml"), Path("deploy", "components", "namespaced-rbac", "roles.yaml")})
"""The RBAC files of the agent's own roles: their generated rules also grant ``READ_ONLY_VERBS``
on ``READS`` (the tenants' Roles do not: the agent reads as itself)."""

BEGIN = "# BEGIN child kinds: generated from agent/kinds/registry.py by make docs"
END = "# END child kinds"
"""The comment lines around the generated rules (each on a line of its own, indented as the rules)."""


def status_fields(kinds: Sequence[ChildKind] = CHILD_KINDS) -> dict[str, Obj]:
    """Every kind's status fields (``ChildKind.status_schema``), field name to its OpenAPI v3
    schema, in ``kinds`` order. Raises ValueError when two kinds add the same field, or a kind's
    ``status_field`` is not among its own."""
    fields: dict[str, Obj] = {}
    for kind in kinds:
        if kind.status_field not in kind.status_schema:
            raise ValueError(f"{kind.kind}: status_schema has no schema for its status_field {kind.status_field!r}")
        if taken := sorted(fields.keys() & kind.status_schema.keys()):
            raise ValueError(f"{kind.kind}: status fields of another kind: {', '.join(taken)}")
        fields.update(kind.status_schema)
    return fields


def rules(verbs: Sequence[str], kinds: Sequence[ChildKind] = CHILD_KINDS) -> list[Obj]:
    """The RBAC rules for ``kinds``: one per API group (in the order groups first appear), its
    resources in ``kinds`` order, each granting ``verbs``."""
    groups: dict[str, list[str]] = {}
    for kind in kinds:
        groups.setdefault(kind.group, []).append(kind.plural)
    return [{"apiGroups": [group], "resources": plurals, "verbs": list(verbs)} for group, plurals in groups.items()]


def rule_lines(verbs: Sequence[str], kinds: Sequence[ChildKind] = CHILD_KINDS,
               reads: Sequence[tuple[str, str]] = ()) -> list[str]:
    """``rules(verbs, kinds)`` as YAML lines of a ``rules:`` list (no indent, no line ends), in the
    style of the hand-written rules: flow lists of quoted strings; then one rule per API group of
    ``reads`` ((group, plural)s) granting ``READ_ONLY_VERBS``."""
    lines = []
    groups: dict[str, list[str]] = {}
    for group, plural in reads:
        groups.setdefault(group, []).append(plural)
    extra = [{"apiGroups": [group], "resources": plurals, "verbs": list(READ_ONLY_VERBS)}
             for group, plurals in groups.items()]
    for rule in rules(verbs, kinds) + extra:
        lines += [f"- apiGroups: {json.dumps(rule['apiGroups'])}",
                  f"  resources: {json.dumps(rule['resources'])}",
                  f"  verbs: {json.dumps(rule['verbs'])}"]
    return lines


def fill(text: str, verbs: Sequence[str], kinds: Sequence[ChildKind] = CHILD_KINDS,
         reads: Sequence[tuple[str, str]] = ()) -> str:
    """``text`` (an RBAC file) with the lines between each ``BEGIN`` and ``END`` line replaced by
    ``rule_lines(verbs, kinds, reads)``, indented as the ``BEGIN`` line. Raises ValueError when ``text``
    has no such pair, or a marker without its partner."""
    out: list[str] = []
    inside = False
    blocks = 0
    for line in text.splitlines(keepends=True):
        marker = line.strip()
        if marker == BEGIN:
            if inside:
                raise ValueError(f"{BEGIN!r} twice without {END!r}")
            inside, blocks = True, blocks + 1
            indent = line[:len(line) - len(line.lstrip())]
            out += [line, *(f"{indent}{rule}\n" for rule in rule_lines(verbs, kinds, reads))]
        elif marker == END:
            if not inside:
                raise ValueError(f"{END!r} without {BEGIN!r}")
            inside = False
            out.append(line)
        elif not inside:
            out.append(line)
    if not blocks:
        raise ValueError(f"no {BEGIN!r} line")
    if inside:
        raise ValueError(f"{BEGIN!r} without {END!r}")
    return "".join(out)
