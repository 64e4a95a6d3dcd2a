"""The flags of the commands that read the repository, and what they become.

``sync``, ``diff`` and ``run`` share the source, scope and cluster flags (``add_source_flags``);
they and ``validate`` share the report's (``add_output_flags``) and the repository's
credentials (``credentials``). ``options_from`` makes the pass's ``sync.Options`` of them.
Nothing here imports the cluster client when ``validate`` uses it.
"""

from __future__ import annotations

import argparse
import os
import urllib.parse

from agent.cli import flags, nametypes, output
from agent.source import mirror as source
from agent.source import origin
from agent.source.cachedir import default_cache_dir

TOKEN_VARIABLE = "GITOPS_AGENT_GIT_TOKEN"
_env = flags.env  # a flag's default from GITOPS_AGENT_<NAME>, checked (and named) by the flag's type


def add_source_flags(parser: argparse.ArgumentParser) -> None:
    """Flags shared by every command that syncs (``sync``, ``diff``, ``run``): source, scope,
    cluster connection, logging."""
    from agent.engine import guards, writes  # writes imports the cluster client, which validate never does
    from agent.kube import ratelimit

    flags.add_log_flags(parser, _env, "WARNING for sync, INFO for run")

    def flag(name, env, help_, **kw):
        parser.add_argument(name, help=f"{help_} [env GITOPS_AGENT_{env}]", **kw)

    flag("--repo", "REPO", "Git repository: local path, file://, https:// or ssh:// URL",
         default=_env("REPO"), required=_env("REPO") is None, type=flags.repo)
    flag("--ref", "REF", "branch, tag or commit SHA to sync, also as a full name (refs/heads/main, refs/tags/v1); "
         "default: the remote's HEAD", default=_env("REF"), type=flags.non_empty)
    flag("--path", "PATH", "directory inside the repository holding Application YAML (default: .)",
         default=_env("PATH", "."), type=flags.non_empty)
    flag("--namespace", "NAMESPACE", "namespace for Applications that name none (default: default)",
         default=_env("NAMESPACE", "default"), type=nametypes.dns_label)
    flag("--source-id", "SOURCE_ID", "name for this repository and path in the heumsi.github.io/source label "
         "of its Applications; only they are ever pruned by this source (default: derived from the repository's "
         "identity and --path; a checkout given by path is its origin remote, so CI's checkout and run's URL are one "
         "source; set it to keep ownership when the repository or path changes)", default=_env("SOURCE_ID"),
         type=nametypes.label_value)
    flags.add_kubeconfig_flags(parser)
    flag("--cache-dir", "CACHE_DIR", f"where Git mirrors are kept (default: {default_cache_dir()})",
         default=_env("CACHE_DIR", default_cache_dir()), type=flags.non_empty)
    flag("--api-retry-seconds", "API_RETRY_SECONDS", "how long one API call retries transient faults "
         "(connection errors, 429, 5xx) before the pass gives up; 0 to 600 (default: 20)",
         type=flags.number(0, 600), default=_env("API_RETRY_SECONDS", "20"))
    flag("--concurrency", "CONCURRENCY", "API writes (apply, prune, status, events) a pass sends at once; "
         f"1 to {writes.MAX_CONCURRENCY} (default: {writes.DEFAULT_CONCURRENCY})",
         type=flags.number(1, writes.MAX_CONCURRENCY, integer=True, unit="requests"),
         default=_env("CONCURRENCY", str(writes.DEFAULT_CONCURRENCY)))
    flag("--kube-api-qps", "KUBE_API_QPS", "client-side rate limit: API requests per second, on average; "
         f"0.1 to 10000 (default: none when the API server has API Priority and Fairness, else "
         f"{ratelimit.DEFAULT_QPS:g}; as Flux)",
         type=flags.number(0.1, 10000, unit="requests per second"), default=_env("KUBE_API_QPS"))
    flag("--kube-api-burst", "KUBE_API_BURST", "client-side rate limit: API requests allowed at once above "
         f"the rate after a quiet spell; 1 to 100000 (default: none when the API server has API Priority "
         f"and Fairness, else {ratelimit.DEFAULT_BURST}; as Flux)",
         type=flags.number(1, 100000, integer=True, unit="requests"), default=_env("KUBE_API_BURST"))
    flag("--fetch-timeout", "FETCH_TIMEOUT", "seconds a Git fetch may take; above 0, at most 3600 (default: 60)",
         type=flags.number(0, 3600, above=True), default=_env("FETCH_TIMEOUT", "60"))
    flags.switch(parser, "--prune", variable="PRUNE", default=True,
                 help="delete Applications (and children) the agent owns that Git no longer has "
                      "(default: on) [env GITOPS_AGENT_PRUNE]")
    flags.add_submodules_switch(parser)
    flags.switch(parser, "--allow-empty", variable="ALLOW_EMPTY", default=False, negatable=False,
                 help="allow a commit with no Applications to prune every Application the agent owns "
                      "[env GITOPS_AGENT_ALLOW_EMPTY]")
    flag("--max-prune-share", "MAX_PRUNE_SHARE", "a pass that would prune more than this share (0 to 1) of "
         f"this source's Applications, and more than {guards.MIN_PRUNES_GUARDED}, prunes nothing and exits 2 "
         "(default: 0.5; 1.0 turns the guard off)", type=flags.number(0, 1, unit=""),
         default=_env("MAX_PRUNE_SHARE", "0.5"))
    flags.add_credential_flags(parser)
    flag("--allowed-namespaces", "ALLOWED_NAMESPACES", "comma-separated namespace names or globs "
         "(team-*) that Applications may target; an Application elsewhere is refused and nothing there is "
         "created or pruned; plain names need only namespaced Roles. kube-system, kube-public, kube-node-lease "
         "and the agent's own namespace ($POD_NAMESPACE) are refused unless listed by their plain name, not "
         "a glob (default: every namespace but those)",
         default=_env("ALLOWED_NAMESPACES"), type=nametypes.namespace_patterns)
    flag("--allowed-service-accounts", "ALLOWED_SERVICE_ACCOUNTS", "comma-separated ServiceAccount names or globs "
         "(app-*) an Application's spec.serviceAccountName may name; another is refused. One that names none runs "
         "as its namespace's default, always allowed. The agent's own ServiceAccount ($POD_NAMESPACE and "
         "$POD_SERVICE_ACCOUNT) is refused whatever this says (default: any but the agent's own)",
         default=_env("ALLOWED_SERVICE_ACCOUNTS"), type=nametypes.service_account_patterns)
    flag("--adopt-namespaces", "ADOPT_NAMESPACES", "comma-separated namespace names or globs where an "
         "Application's heumsi.github.io/adopt annotation is honoured: objects in its children's slots that no "
         "controller holds are taken over there. Elsewhere the annotation is ignored and the Application fails "
         "with OwnershipConflict, saying so (default: none; Git alone cannot take over what someone made by hand)",
         default=_env("ADOPT_NAMESPACES"), type=nametypes.namespace_patterns)
    flags.add_snippets_switch(parser)
    flags.add_security_profile_flag(parser)
    flag("--tenant-service-account", "TENANT_SERVICE_ACCOUNT", "write each Application's children as this "
         "ServiceAccount of the Application's namespace (Kubernetes impersonation, as Flux's "
         "--default-service-account), so that namespace's RBAC bounds what Git can make there; a refusal names the "
         "verb, the object and the ServiceAccount. Applications, their status, Events and reads stay the agent's "
         "own (default: none, every write is the agent's)", default=_env("TENANT_SERVICE_ACCOUNT"),
         type=nametypes.dns_subdomain)


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    """``-o/--output text|json|markdown`` and ``--quiet`` (no progress bar)."""
    parser.add_argument("-o", "--output", type=flags.choice(*output.FORMATS), default=_env("OUTPUT", "text"),
                        metavar="{" + ",".join(output.FORMATS) + "}",
                        help="report format on stdout: text, json (one document, see agent/report.schema.json) "
                             "or markdown (for a pull-request comment) [env GITOPS_AGENT_OUTPUT]")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar (it is only drawn when stdout and stderr are terminals)")


def credentials(args) -> source.Credentials:
    """The repository's credentials from the flags: the token from ``--git-token-file`` or
    ``GITOPS_AGENT_GIT_TOKEN``, the user from ``--git-username``, else the user written in an
    ``http(s)://`` ``--repo`` URL, else ``git``; the SSH key and known_hosts files.
    Raises ``flags.UsageError`` when the token file cannot be read, when it or the variable
    holds no token or more than one line (``flags.one_line_token``), or when ``--repo``'s
    user-info and the flags disagree (another user, another token): one would silently win.
    The message names neither the user-info nor the token (a token can be written as the
    URL's user). Without a token here, ``source.effective`` uses the URL's own user and
    password, as before (never sent to a submodule). Raises ``flags.UsageError`` too when a
    token (given or in the URL) would go over plain ``http://`` to a host that is not loopback
    without ``--allow-insecure-http`` (``source.plain_http_refused``)."""
    if args.git_token_file:  # wins over the variable, which is then not read
        token, token_from = flags.read_token_file(args.git_token_file), flags.shown(args.git_token_file)
    else:
        token, token_from = flags.token_variable(TOKEN_VARIABLE, "--git-token-file"), TOKEN_VARIABLE
    username = args.git_username
    parts = urllib.parse.urlsplit(args.repo or "")
    if parts.scheme.lower() in ("http", "https") and "@" in parts.netloc:
        written = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
        if username is not None and (password or written) and username != (written or "git"):
            raise flags.UsageError(f"{flags.shown(username)} is not allowed: must be the user written in --repo's "
                                   "URL when both are given (they differ; the URL's is not shown): give the user in "
                                   "one place", flag="--git-username")
        if token and password and token != password:
            raise flags.UsageError(f"{token_from} is not allowed: must be the same token as the password written "
                                   "in --repo's URL when both are given (they differ; neither is shown): give the "
                                   "token in one place", flag="--git-token-file")
        username = username or written or None
    creds = source.Credentials(token=token, username=username or "git",
                               ssh_key_file=args.ssh_key_file, known_hosts_file=args.known_hosts_file,
                               insecure_http=bool(getattr(args, "allow_insecure_http", False)),
                               submodule_hosts=tuple(getattr(args, "submodule_hosts", None) or ()))
    if args.repo:
        refused = source.plain_http_refused(*source.effective(args.repo, creds))
        if refused:
            raise flags.UsageError(refused, flag="--repo")
    return creds


def options_from(args: argparse.Namespace):
    """sync.Options from parsed flags. The repository's identity and the default source id are
    those of ``origin.repository_of``: a checkout given by path is its ``origin`` remote. Raises flags.UsageError naming the flag when the token
    file cannot be read or the credentials contradict ``--repo``'s user-info (``credentials``)."""
    from agent.engine import sync

    credentials_ = credentials(args)
    identity, former = origin.repository_of(args.repo)  # a checkout is its origin (issue 46)
    formerly = () if args.source_id or former is None else (source.source_id_of(former, args.path),)
    return sync.Options(repo=args.repo, ref=args.ref, path=args.path, namespace=args.namespace,
                        prune=args.prune, allow_empty=args.allow_empty, cache_dir=args.cache_dir,
                        fetch_timeout=args.fetch_timeout, credentials=credentials_,
                        source_id=args.source_id or source.source_id_of(identity, args.path),
                        repository=identity, former_source_ids=formerly,
                        submodules=args.submodules, allowed_namespaces=args.allowed_namespaces,
                        agent_namespace=os.environ.get("POD_NAMESPACE", "").strip() or None,
                        agent_service_account=os.environ.get("POD_SERVICE_ACCOUNT", "").strip() or None,
                        allowed_service_accounts=args.allowed_service_accounts,
                        adopt_namespaces=args.adopt_namespaces, allow_ingress_snippets=args.allow_ingress_snippets,
                        max_prune_share=args.max_prune_share,
                        default_security_profile=args.default_security_profile,
                        observed_by="run" if getattr(args, "command", None) == "run" else "sync --once")
