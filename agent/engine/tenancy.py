"""What an Application in Git may not ask for whatever namespace it is in: the tenant rules that
``--allowed-namespaces`` (``scope``) cannot say. Pure.

Why here and not in ``manifests``' schema: these rules depend on where the agent runs and on the
operator's flags, not on the document alone. Why refused before anything is applied, like a
namespace outside the scope: whoever can push to the synced branch must not make pods that run with
the agent's own ServiceAccount token (it can list every pod's env and patch every ConfigMap the agent
may; issue 42), nor with one the operator did not allow.

The rules (``refuse``):

- ``spec.serviceAccountName`` may not name the agent's own ServiceAccount: ``agent_namespace`` and
  ``agent_service_account`` (``POD_NAMESPACE`` and ``POD_SERVICE_ACCOUNT``, from the downward API in
  ``deploy/``). A ServiceAccount is named within the pod's namespace, so only an Application in the
  agent's own namespace can (and that namespace is itself refused unless named: ``scope``).
- Adoption of an object no controller holds needs the operator's consent as well as Git's
  (``adoption_denied``): ``--adopt-namespaces`` names the namespaces where the
  ``heumsi.github.io/adopt`` annotation is honoured, none by default. Adopting makes a hand-made
  object the agent's, and a later commit that drops it deletes it: one commit could otherwise take
  over and then delete whatever someone made by hand in a namespace the agent may write.
- An Ingress annotation that injects configuration into the ingress controller (``ingress.snippets``:
  ingress-nginx ``*-snippet``) is refused unless ``allow_ingress_snippets`` (``--allow-ingress-snippets``):
  the controller serves every namespace's hosts from that one configuration.
- With ``allowed_service_accounts`` (``--allowed-service-accounts``: names or shell-style globs), a
  ``spec.serviceAccountName`` must match one of them. An Application that names none runs as its
  namespace's ``default``, which the cluster's administrator set up, and is always allowed.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from agent.api.labels import ADOPT_ANNOTATION
from agent.engine.options import Options
from agent.kinds import ingress
from agent.manifests.loader import ManifestError


@dataclass(frozen=True)
class Policy:
    """The operator's tenant rules: ``agent_namespace`` and ``agent_service_account`` (None: not
    known, e.g. outside a pod), ``allowed_service_accounts`` (None: any but the agent's own),
    ``allow_ingress_snippets`` (``--allow-ingress-snippets``)."""

    agent_namespace: str | None = None
    agent_service_account: str | None = None
    allowed_service_accounts: tuple[str, ...] | None = None
    allow_ingress_snippets: bool = False


def policy(opts: Options) -> Policy:
    """The ``Policy`` of ``opts``."""
    return Policy(opts.agent_namespace, opts.agent_service_account, opts.allowed_service_accounts,
                  opts.allow_ingress_snippets)


def service_account_problem(namespace: str, account: str | None, policy: Policy) -> str | None:
    """Why an Application in ``namespace`` may not run its pods as ``account`` (its
    ``spec.serviceAccountName``; None: the namespace's default), or None when it may."""
    if account is None:
        return None
    if policy.agent_service_account and namespace == policy.agent_namespace and account == policy.agent_service_account:
        return (f"{account!r} is the agent's own ServiceAccount ({namespace}/{account}, POD_SERVICE_ACCOUNT): its "
                "token holds the agent's permissions, so no Application may run pods as it; use a ServiceAccount "
                "of the Application's own")
    patterns = policy.allowed_service_accounts
    if patterns is not None and not any(fnmatch.fnmatchcase(account, p) for p in patterns):
        return (f"{account!r} is not allowed (--allowed-service-accounts {','.join(patterns)}); name an allowed "
                "ServiceAccount or none (the namespace's default)")
    return None


def adoption_denied(namespace: str, patterns: tuple[str, ...] | None) -> str | None:
    """Why the ``heumsi.github.io/adopt`` annotation of an Application in ``namespace`` is not
    honoured (the operator's consent, ``--adopt-namespaces`` names or globs, does not cover the
    namespace; None: no namespace), or None when it is."""
    if patterns is not None and any(fnmatch.fnmatchcase(namespace, p) for p in patterns):
        return None
    now = f"it is {','.join(patterns)}" if patterns is not None else "it is not set"
    return (f'the Application has {ADOPT_ANNOTATION}: "true", but the operator has not consented to adoption in '
            f"namespace {namespace!r} (--adopt-namespaces names where the annotation is honoured; {now}), so it "
            "was not adopted")


def problems(namespace: str, spec: dict[str, Any], policy: Policy) -> list[tuple[str, str]]:
    """(field, why) of each tenant rule ``spec`` (an Application's, in ``namespace``) breaks."""
    found = []
    why = service_account_problem(namespace, spec.get("serviceAccountName"), policy)
    if why is not None:
        found.append(("spec.serviceAccountName", why))
    if not policy.allow_ingress_snippets:
        found += [("spec.ingress.annotations", ingress.snippet_refusal(key)) for key in ingress.snippets(spec)]
    return found


def refuse(found: list[Any], policy: Policy) -> tuple[list[Any], list[ManifestError]]:
    """(the manifests the tenant rules allow, one ``ManifestError`` per rule broken: its file, the
    line of its document, the field and ``Application NAMESPACE/NAME: `` before the rule broken).
    ``found``: ``Manifest``s."""
    kept, refused = [], []
    for m in found:
        broken = problems(m.namespace, m.body.get("spec") or {}, policy)
        if not broken:
            kept.append(m)
        refused += [ManifestError(m.path, m.line, field, f"Application {m.namespace}/{m.name}: {why}; nothing was "
                                  "created, changed or pruned for it") for field, why in broken]
    return kept, refused
