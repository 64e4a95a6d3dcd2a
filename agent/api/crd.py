"""The Application CRD, built from the one schema in ``agent.api.schema``, and the API server's
validation of a whole Application document against it. Pure.

The status fields that name or describe a child come from the child kinds (each
``ChildKind.status_schema``); this layer sits below ``agent.kinds``, so ``definition`` takes them
as an argument. The repository's ``crd.yaml`` is generated from the registry by ``make docs``
(``python -m agent.cli.reference --crd > crd.yaml``, ``reference.crd_text``); a unit test fails
when the two differ. The package holds no copy of the file, so ``validate`` applies the API
server's own rules even when the agent is installed from a wheel with no checkout around it.

The API server validates a custom resource against the version's ``openAPIV3Schema``; this
module does the same with ``schema.validator`` (Kubernetes extensions such as
``x-kubernetes-list-type`` are ignored: they constrain merges, not single documents). Integers
are Kubernetes integers: ``true`` and ``3.0`` are not integers.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from agent.api.schema import GROUP, KIND, PLURAL, SPEC_SCHEMA, VERSION, validator

NAME = f"{PLURAL}.{GROUP}"
HEADER = (
    "# The Application custom resource (applications.heumsi.github.io), compatible with the original",
    "# design's CRD: an Application YAML written for that CRD applies and syncs unchanged.",
    "# Generated from agent/api/ and agent/kinds/ by make docs; do not edit. Install: kubectl apply -f crd.yaml",
)
"""The comment lines at the top of the generated ``crd.yaml``."""

STATUS_SCHEMA: dict = {
    "type": "object",
    "description": "Observed state, written by the agent through the status subresource.",
    "properties": {
        "observedGeneration": {
            "type": "integer",
            "description": "metadata.generation this status was computed for."
        },
        "lastSyncedCommit": {
            "type": "string",
            "description": "Full SHA of the last commit whose sync of this Application fully succeeded."
        },
        "lastSyncedCommitShort": {
            "type": "string",
            "description": "The first 7 characters of lastSyncedCommit, for kubectl get."
        },
        "lastAttemptedCommit": {
            "type": "string",
            "description": "Full SHA of the commit the last pass worked from."
        },
        "lastSyncTime": {
            "type": "string",
            "format": "date-time",
            "description": "When a change was last applied or the synced commit last advanced."
        },
        "lastChangedCommit": {
            "type": "string",
            "description": "Full SHA of the commit that last changed what this Application deploys (its spec); commits that touch only other files or other Applications leave it."
        },
        "lastChangedCommitShort": {
            "type": "string",
            "description": "The first 7 characters of lastChangedCommit, for kubectl get."
        },
        "history": {
            "type": "array",
            "maxItems": 5,
            "description": "The last 5 distinct contents this Application deployed, newest first, one per spec digest.",
            "items": {
                "type": "object",
                "properties": {
                    "digest": {
                        "type": "string",
                        "description": "sha256 of the spec as canonical JSON."
                    },
                    "revision": {
                        "type": "string",
                        "description": "Full SHA of the commit that first brought this content."
                    },
                    "firstSyncedAt": {
                        "type": "string",
                        "format": "date-time",
                        "description": "When this content was first synced."
                    },
                    "lastSyncedAt": {
                        "type": "string",
                        "format": "date-time",
                        "description": "When this content was last synced (a change applied or the synced commit moved)."
                    },
                    "passes": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "How many passes synced this content (passes that applied a change or moved the synced commit)."
                    }
                },
                "required": [
                    "digest",
                    "revision"
                ]
            }
        },
        "sourcePath": {
            "type": "string",
            "description": "Repository path of the file this Application came from."
        },
        "sourceLine": {
            "type": "integer",
            "minimum": 1,
            "description": "Line of this Application's document in sourcePath (1-based)."
        },
        "lastHandledReconcileAt": {
            "type": "string",
            "description": "The token of the newest sync-now request (annotation heumsi.github.io/reconcile-requested-at) a pass handled, as given."
        },
        "failures": {
            "type": "integer",
            "minimum": 1,
            "description": "Consecutive passes whose apply of this Application or a child failed; absent after a success."
        },
        "nextRetryTime": {
            "type": "string",
            "format": "date-time",
            "description": "When run retries this failing Application (exponential backoff); a new commit, a spec change or a sync-now request retries at once. Absent after a success."
        },
        "suspended": {
            "type": "boolean",
            "description": "Present and true while the Application is suspended (spec.suspend, or the annotation heumsi.github.io/reconcile: disabled on it): its children are not applied. Absent otherwise."
        },
        "health": {
            "type": "object",
            "description": "Worst health of the children (gitops-engine's statuses): Healthy, Suspended, Progressing, Missing or Degraded, and why.",
            "properties": {
                "status": {
                    "type": "string",
                    "enum": [
                        "Healthy",
                        "Progressing",
                        "Degraded",
                        "Missing",
                        "Suspended"
                    ]
                },
                "message": {
                    "type": "string"
                }
            }
        },
        "observedAt": {
            "type": "string",
            "format": "date-time",
            "description": "When the pass that last changed this status observed it (RFC 3339 UTC). A pass that finds nothing new writes nothing, so under sync --once the status is as of this time; run rewrites it as soon as a child moves."
        },
        "observedBy": {
            "type": "string",
            "description": "The command whose pass wrote this status at observedAt: sync --once, run, or reconcile (a pass of run asked for by python -m agent reconcile)."
        },
        "conditions": {
            "description": "kstatus conditions: Ready (synced at the current commit and healthy), Reconciling and Stalled (present only while True), and Synced.",
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": [
                "type"
            ],
            "items": {
                "type": "object",
                "required": [
                    "type",
                    "status"
                ],
                "properties": {
                    "type": {
                        "type": "string"
                    },
                    "status": {
                        "type": "string",
                        "enum": [
                            "True",
                            "False",
                            "Unknown"
                        ]
                    },
                    "reason": {
                        "type": "string"
                    },
                    "message": {
                        "type": "string"
                    },
                    "lastTransitionTime": {
                        "type": "string",
                        "format": "date-time"
                    },
                    "observedGeneration": {
                        "type": "integer"
                    }
                }
            }
        }
    }
}
"""OpenAPI v3 schema of ``status``: what the agent writes through the status subresource, but
for the fields of the child kinds (``status_schema`` adds them)."""

CHILDREN_AFTER = "nextRetryTime"
"""The child kinds' status fields follow this one in ``status.properties`` (the order of
``kubectl explain`` and of the reference page; the API server does not care)."""

PRINTER_COLUMNS: list = [
    {
        "name": "Image",
        "type": "string",
        "jsonPath": ".spec.image"
    },
    {
        "name": "Replicas",
        "type": "integer",
        "jsonPath": ".spec.replicas"
    },
    {
        "name": "Ready",
        "type": "integer",
        "jsonPath": ".status.readyReplicas"
    },
    {
        "name": "Commit",
        "type": "string",
        "jsonPath": ".status.lastSyncedCommitShort"
    },
    {
        "name": "Changed",
        "type": "string",
        "jsonPath": ".status.lastChangedCommitShort"
    },
    {
        "name": "Health",
        "type": "string",
        "jsonPath": ".status.health.status"
    },
    {
        "name": "Status",
        "type": "string",
        "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"
    },
    {
        "name": "Observed",
        "type": "date",
        "jsonPath": ".status.observedAt"
    },
    {
        "name": "Age",
        "type": "date",
        "jsonPath": ".metadata.creationTimestamp"
    },
    {
        "name": "Message",
        "type": "string",
        "jsonPath": ".status.health.message"
    }
]
"""``kubectl get applications`` columns; the last, the health message, says why (a rollout's
failure: ``ImagePullBackOff: ...``), as Flux's ``kubectl get kustomization`` does (issue 45)."""


def status_schema(children: Mapping[str, dict]) -> dict:
    """``STATUS_SCHEMA`` with ``children``, the child kinds' status fields (field name to its
    OpenAPI v3 schema, in order), after ``CHILDREN_AFTER``. Raises ValueError when a child's
    field is one the Application's status already has."""
    own = STATUS_SCHEMA["properties"]
    if taken := sorted(own.keys() & children.keys()):
        raise ValueError(f"child status fields clash with the Application's own: {', '.join(taken)}")
    properties: dict = {}
    for key, sub in own.items():
        properties[key] = sub
        if key == CHILDREN_AFTER:
            properties.update(children)
    return {**STATUS_SCHEMA, "properties": properties}


def openapi_schema(children: Mapping[str, dict]) -> dict:
    """The ``openAPIV3Schema`` of version ``v1``: ``spec`` (required) and ``status``, with the
    child kinds' status fields ``children`` (``status_schema``)."""
    return {"type": "object", "required": ["spec"],
            "properties": {"spec": SPEC_SCHEMA, "status": status_schema(children)}}


def definition(children: Mapping[str, dict]) -> dict:
    """The whole CustomResourceDefinition as a dict (apiextensions.k8s.io/v1); ``children``: the
    child kinds' status fields (``status_schema``)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": KIND.lower(), "kind": KIND, "shortNames": ["app"]},
            "versions": [{
                "name": VERSION, "served": True, "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": PRINTER_COLUMNS,
                "schema": {"openAPIV3Schema": openapi_schema(children)},
            }],
        },
    }


@functools.lru_cache(maxsize=1)
def _validator():
    # ``problems`` never validates ``status``, so the child kinds' status fields do not matter here.
    return validator(openapi_schema({}))


def problems(document: dict) -> list[tuple[tuple, str]]:
    """Every violation of the CRD's schema in one Application ``document`` (the body as
    applied: apiVersion, kind, metadata, spec; ``status`` is never applied and is left out).
    Returns (field path as a tuple of keys and indexes, message), sorted; empty when valid."""
    body = {k: v for k, v in document.items() if k != "status"}
    found = {(tuple(e.absolute_path), e.message) for e in _validator().iter_errors(body)}
    return sorted(found, key=lambda p: (list(map(str, p[0])), p[1]))
