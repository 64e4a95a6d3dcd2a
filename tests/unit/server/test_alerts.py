"""The alert rules shipped in deploy/components/alerts/: the plain Prometheus rules file and the
PrometheusRule hold the same rules, and every metric they name is one the agent serves
(``server.endpoints.Metrics``), with the labels it has."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from agent.server.endpoints import Metrics

ALERTS = Path(__file__).resolve().parents[3] / "deploy" / "components" / "alerts"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def served() -> dict[str, set[str]]:
    """Every sample name the agent's metrics can serve -> their label names (the attributes of
    ``Metrics``: prometheus-client collectors, whose families lose the label names until set)."""
    out = {}
    for collector in vars(Metrics()).values():
        if hasattr(collector, "_labelnames"):
            for suffix in SUFFIXES[collector._type]:
                out[collector._name + suffix] = set(collector._labelnames) | ({"le"} if suffix == "_bucket" else set())
    return out


def plain() -> dict:
    return yaml.safe_load((ALERTS / "rules.yaml").read_text())


def operator() -> dict:
    return yaml.safe_load((ALERTS / "prometheusrule.yaml").read_text())


def test_the_prometheusrule_holds_exactly_the_plain_rules():
    rule = operator()
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert rule["spec"] == plain()
    kustomization = yaml.safe_load((ALERTS / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component" and kustomization["resources"] == ["prometheusrule.yaml"]


def test_the_rules_cover_the_source_readiness_and_pass_failures():
    [group] = plain()["groups"]
    rules = {r["alert"]: r for r in group["rules"]}
    assert set(rules) == {"GitopsAgentSourceUnavailable", "GitopsAgentApplicationsNotReady", "GitopsAgentPassesFailing"}
    assert "gitops_agent_source_last_success_timestamp_seconds > 600" in rules["GitopsAgentSourceUnavailable"]["expr"]
    for rule in rules.values():
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}
        assert rule["labels"]["severity"] in ("warning", "critical") and re.fullmatch(r"\d+m", rule["for"])
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_every_metric_and_label_the_rules_name_is_served():
    metrics = served()
    assert "gitops_agent_source_last_success_timestamp_seconds" in metrics
    assert metrics["gitops_agent_source_last_success_timestamp_seconds"] == {"source"}
    for rule in plain()["groups"][0]["rules"]:
        names = re.findall(r"\b(gitops_agent_[a-z_]+)(\{[^}]*\})?", rule["expr"])
        assert names, rule["expr"]
        for name, selector in names:
            assert name in metrics, f"{rule['alert']}: {name} is not a metric the agent serves"
            for label in re.findall(r"(\w+)\s*=~?", selector):
                assert label in metrics[name], f"{rule['alert']}: {name} has no label {label}"
