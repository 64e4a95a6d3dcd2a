"""agent.kinds.install: the CRD's child status fields and the RBAC rules of deploy/ come from the
registry, and the committed copies are the generated ones."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from agent.api import crd
from agent.cli import reference
from agent.kinds import install
from agent.kinds.registry import BY_KIND, CHILD_KINDS

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("path", install.RBAC)
def test_the_committed_rbac_rules_are_the_generated_ones(path):
    committed = (ROOT / path).read_text(encoding="utf-8")
    assert committed == reference.rbac_files(ROOT)[ROOT / path], f"{path} is stale: run make docs"


def test_the_development_guide_names_every_generated_rbac_file():
    """docs/development.md (Generated docs; A new child kind) lists what ``make docs`` rewrites."""
    guide = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    generated = guide[guide.index("## Generated docs"):]
    new_kind = guide[guide.index("### A new child kind"):]
    for path in install.RBAC:
        assert f"`{path.as_posix()}`" in generated and f"`{path.as_posix()}`" in new_kind, path


def granted(path: Path) -> dict[tuple, set[tuple[str, str, str]]]:
    """(kind, namespace, name) of each Role or ClusterRole in ``path`` to its (group, resource, verb)s."""
    found = {}
    for doc in yaml.safe_load_all((ROOT / path).read_text(encoding="utf-8")):
        if doc and doc["kind"] in ("Role", "ClusterRole"):
            key = (doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"])
            found[key] = {(g, r, v) for rule in doc["rules"] for g in rule["apiGroups"] for r in rule["resources"]
                          for v in rule["verbs"]}
    return found


@pytest.mark.parametrize("path, verbs", install.RBAC.items())
def test_every_role_grants_every_child_kind_its_verbs(path, verbs):
    roles = {key: rules for key, rules in granted(path).items()
             if key[2] in ("gitops-agent", "gitops-tenant")}  # not the Lease's nor the Ingress list's
    assert roles
    for rules in roles.values():
        assert {(k.group, k.plural, v) for k in CHILD_KINDS for v in verbs} <= rules


def test_the_agent_reads_children_and_the_tenants_write_them():
    """Issue 42: the agent's own roles grant no child write; each namespace's tenant Role does."""
    assert install.RBAC[Path("deploy", "rbac.yaml")] == ("get", "list", "watch")
    assert install.RBAC[Path("deploy", "components", "namespaced-rbac", "roles.yaml")] == ("get", "list")
    assert install.RBAC[Path("deploy", "tenants.yaml")] == ("get", "list", "create", "patch", "delete")
    agent = granted(Path("deploy", "rbac.yaml"))[("ClusterRole", None, "gitops-agent")]
    assert not {(k.group, k.plural, v) for k in CHILD_KINDS for v in ("create", "patch", "delete")} & agent
    assert ("", "serviceaccounts", "impersonate") in agent


def test_rules_are_one_per_api_group_in_registry_order():
    kinds = [BY_KIND["Deployment"], BY_KIND["Service"], BY_KIND["ConfigMap"]]
    assert install.rules(("get",), kinds) == [
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["services", "configmaps"], "verbs": ["get"]},
    ]
    assert install.rule_lines(("get", "list"), kinds[:1]) == [
        '- apiGroups: ["apps"]', '  resources: ["deployments"]', '  verbs: ["get", "list"]']


def test_fill_replaces_only_between_the_markers_at_their_indent():
    text = f"rules:\n  - old: 1\n    {install.BEGIN}\n    - stale: 1\n    {install.END}\n  - after: 1\n"
    filled = install.fill(text, ("get",), [BY_KIND["Service"]])
    assert filled == (f"rules:\n  - old: 1\n    {install.BEGIN}\n    - apiGroups: [\"\"]\n"
                      f"      resources: [\"services\"]\n      verbs: [\"get\"]\n    {install.END}\n  - after: 1\n")
    assert install.fill(filled, ("get",), [BY_KIND["Service"]]) == filled


@pytest.mark.parametrize("text", ["rules: []\n", f"{install.BEGIN}\n", f"{install.END}\n",
                                  f"{install.BEGIN}\n{install.BEGIN}\n{install.END}\n"])
def test_fill_refuses_a_file_without_a_pair_of_markers(text):
    with pytest.raises(ValueError):
        install.fill(text, ("get",))


def test_every_kind_describes_its_status_fields():
    for kind in CHILD_KINDS:
        assert kind.status_field in kind.status_schema
        assert set(kind.observed(None)) <= set(kind.status_schema), kind.kind
        assert all(sub.get("type") and sub.get("description") for sub in kind.status_schema.values()), kind.kind


def test_the_crd_status_holds_every_kind_field_after_the_applications_own():
    status = crd.definition(install.status_fields())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    names = list(status["properties"]["status"]["properties"])
    own = list(crd.STATUS_SCHEMA["properties"])
    children = [f for k in CHILD_KINDS for f in k.status_schema]
    after = own.index(crd.CHILDREN_AFTER) + 1
    assert names == own[:after] + children + own[after:]


def test_two_kinds_may_not_add_one_status_field():
    twin = dataclasses.replace(BY_KIND["Service"], kind="Twin")
    with pytest.raises(ValueError, match="service"):
        install.status_fields([BY_KIND["Service"], twin])
    nameless = dataclasses.replace(BY_KIND["Service"], status_schema={})
    with pytest.raises(ValueError, match="status_field"):
        install.status_fields([nameless])
    with pytest.raises(ValueError, match="suspended"):
        crd.status_schema({"suspended": {"type": "string"}})
