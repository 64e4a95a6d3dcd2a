"""YAML out (``agent/manifests/yamlwrite.py``): plain YAML for the agent's own value types."""

from agent.engine.report import Action
from agent.kinds.health import Status
from agent.manifests import yamlwrite
from agent.views.explainview import Verdict


def test_the_vocabulary_is_written_as_plain_strings_never_a_python_tag():
    doc = {"action": Action.CREATED, "health": [Status.HEALTHY], "state": Verdict.SYNCED}
    assert yamlwrite.text(doc) == "action: created\nhealth:\n- Healthy\nstate: Synced\n"
    assert yamlwrite.plain_lines(doc) == ["action: created\n", "health:\n", "- Healthy\n", "state: Synced\n"]
