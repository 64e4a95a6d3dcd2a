"""apply: reading the API server's refusal of an immutable field."""

import pytest

from agent.engine.apply import immutable_field
from agent.kube.client import ApiError

SELECTOR_REFUSED = ('Deployment.apps "web" is invalid: spec.selector: Invalid value: '
                    'v1.LabelSelector{MatchLabels:map[string]string{"app":"web"}}: field is immutable')


@pytest.mark.parametrize("status, message, field", [
    (422, SELECTOR_REFUSED, "spec.selector"),
    (422, 'Service "web" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.0.0.9"}: '
          'may not change once set', "spec.clusterIPs[0]"),
    (422, 'Job.batch "j" is invalid: spec.template: Invalid value: core.PodTemplateSpec{}: field is immutable',
     "spec.template"),
    (422, 'Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
     None),
    (409, SELECTOR_REFUSED, None),  # only a 422 Invalid answer says a field is immutable
    (422, "", None),
])
def test_immutable_field(status, message, field):
    assert immutable_field(ApiError(status, "Invalid", message)) == field
