"""agent.api.schema: one validator, with Kubernetes integers, for validate, the pass and the CRD."""

import pytest

from agent.api import crd, schema


@pytest.mark.parametrize("replicas, valid", [(3, True), (0, True), (3.0, False), (True, False), ("3", False), (-1, False)])
def test_the_pass_and_validate_agree_on_integers(replicas, valid):
    spec = {"image": "nginx:1", "replicas": replicas, "port": 80}
    assert schema.SPEC_VALIDATOR.is_valid(spec) is valid
    assert schema.STRICT_SPEC_VALIDATOR.is_valid(spec) is valid
    document = {"apiVersion": schema.API_VERSION, "kind": schema.KIND, "metadata": {"name": "a"}, "spec": spec}
    assert (crd.problems(document) == []) is valid


def test_only_the_strict_validator_refuses_unknown_fields():
    spec = {"image": "nginx:1", "replicas": 1, "port": 80, "extra": 1}
    assert schema.SPEC_VALIDATOR.is_valid(spec) and not schema.STRICT_SPEC_VALIDATOR.is_valid(spec)


def test_the_crd_is_built_from_the_schema():
    version = crd.definition({})["spec"]["versions"][0]
    assert version["schema"]["openAPIV3Schema"]["properties"]["spec"] is schema.SPEC_SCHEMA
    assert crd.definition({})["metadata"]["name"] == f"{schema.PLURAL}.{schema.GROUP}" == crd.NAME
