"""What one pass syncs and how (``Options``): the flags of ``sync``, ``diff`` and ``run``.

Why a module of its own: every stage of the pass reads the options, and the entry point
(``sync.run``) imports the stages; the options live below both.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.engine import guards
from agent.source import mirror as source
from agent.source.repository import identity as repository_identity


@dataclass(frozen=True)
class Options:
    """What to sync. ``repo``: URL or local path (its ``source.repository_identity`` is recorded on
    every Application applied); ``ref``: branch, tag or SHA (None: the remote's HEAD); ``path``: directory
    inside the repository; ``namespace``: for Applications that name none; ``prune``: delete what the agent
    owns and Git no longer has; ``allow_empty``: permit a commit with no Applications to prune them all;
    ``cache_dir``: where the Git mirror lives; ``fetch_timeout``: seconds; ``source_id``: the value of the
    ``heumsi.github.io/source`` label that marks this source's Applications (see ``source.source_id``);
    ``submodules``: follow submodules under ``path`` (False: a submodule there fails the pass);
    ``max_prune_share``: a pass that would prune more than this share of the source's Applications, and
    more than 10, prunes nothing and fails (1.0: no limit; see ``guards``); ``allowed_namespaces``: names or
    globs Applications may target, ``agent_namespace``: the agent's own namespace, refused with the system
    ones unless ``allowed_namespaces`` names it (``scope.permitted``); ``agent_service_account`` and
    ``allowed_service_accounts``: the ServiceAccounts an Application's pods may not and may run as
    (``tenancy.Policy``); ``adopt_namespaces``: names or globs of the namespaces where the operator
    consents to adoption (``tenancy.adoption_denied``; None: none); ``allow_ingress_snippets``: Ingress
    annotations that inject controller configuration are allowed (``kinds.ingress.snippets``);
    ``default_security_profile``: the ``spec.security.profile`` of Applications that name none
    (``--default-security-profile``: ``podspec.with_default_profile`` before every render);
    ``repository``: the repository's identity recorded in the ``heumsi.github.io/repository``
    annotation (``origin.repository_of``: a checkout's is its ``origin``'s; None:
    ``repository.identity(repo)``); ``former_source_ids``: ids this source had before (a checkout
    with an ``origin`` was its path until issue 46): an Application one of them holds is this
    source's: its next apply relabels it (``sources.refuse``), and it is pruned when Git no longer has it
    (``livestate.app_facts``, ``appplan.plan_applications``);
    ``observed_by``: the command running the pass, recorded as ``status.observedBy``
    (``status.observed``: ``sync --once`` or ``run``)."""

    repo: str
    cache_dir: str
    ref: str | None = None
    path: str = "."
    namespace: str = "default"
    prune: bool = True
    allow_empty: bool = False
    fetch_timeout: float = 60.0
    credentials: source.Credentials | None = None
    source_id: str = "default"
    submodules: bool = True
    allowed_namespaces: tuple[str, ...] | None = None  # names or globs; None: every namespace but the protected
    agent_namespace: str | None = None  # the agent's own (POD_NAMESPACE): refused unless named (scope.protected)
    agent_service_account: str | None = None  # the agent's own (POD_SERVICE_ACCOUNT): never a pod's (tenancy)
    allowed_service_accounts: tuple[str, ...] | None = None  # names or globs; None: any but the agent's own
    adopt_namespaces: tuple[str, ...] | None = None  # where heumsi.github.io/adopt is honoured; None: nowhere
    allow_ingress_snippets: bool = False  # ingress-nginx *-snippet annotations (tenancy)
    max_prune_share: float = guards.DEFAULT_MAX_PRUNE_SHARE
    default_security_profile: str = "none"  # restricted or none (schema.SECURITY_PROFILES)
    repository: str | None = None  # the identity recorded; None: repository.identity(repo)
    former_source_ids: tuple[str, ...] = ()  # held by one of them: this source's (relabelled on apply)
    observed_by: str = "sync --once"  # status.SYNC_ONCE or status.RUN

    def identity(self) -> str:
        """The repository's identity this source records (``repository``, else ``repo``'s)."""
        return self.repository if self.repository is not None else repository_identity(self.repo)
