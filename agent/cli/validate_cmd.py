"""``python -m agent validate``: every problem in Application YAML, with no cluster (the checks
are ``agent/cli/validate.py``'s). Its ``--repo`` is never read from the environment, so a CI job
that sets GITOPS_AGENT_REPO for ``sync`` still validates the work tree with ``--path``.

Nothing here imports the cluster client: a pre-commit hook starts ``validate`` on every commit
(``agent/cli/commands.py`` imports only the module of the command given).
"""

from __future__ import annotations

import argparse
import logging
import sys

from agent.cli import flags, nametypes, output, passrun, sourceflags, validate
from agent.cli.commands import Command
from agent.common import exitcodes, logs
from agent.source import mirror as source
from agent.source.cachedir import default_cache_dir

EPILOG = """exit codes:
  0  valid: every file parsed and every Application would be accepted by the API server
  2  invalid: every problem is listed with file, line and field; or the source could not be
     read, or a flag was wrong
"""
_env = flags.env  # a flag's default from GITOPS_AGENT_<NAME>, checked (and named) by the flag's type


def arguments(parser: argparse.ArgumentParser) -> None:
    """``validate``'s flags: where the YAML is (a directory, or a commit with ``--repo``), the
    repository's credentials, logging and the report's format."""
    parser.add_argument("--repo", type=flags.repo,
                        help="Git repository to read a commit of (default: none, --path is a directory on disk)")
    parser.add_argument("--ref", type=flags.non_empty,
                        help="branch, tag or commit SHA, also as a full name (refs/heads/main); only with --repo; "
                             "default: the remote's HEAD")
    parser.add_argument("--path", default=".", type=flags.non_empty,
                        help="directory of Application YAML: on disk, or inside the repository with --repo "
                             "(default: .)")
    parser.add_argument("--namespace", default=_env("NAMESPACE", "default"), type=nametypes.dns_label,
                        help="namespace for Applications that name none (default: default) [env GITOPS_AGENT_NAMESPACE]")
    parser.add_argument("--cache-dir", default=_env("CACHE_DIR", default_cache_dir()), type=flags.non_empty,
                        help=f"where Git mirrors are kept (default: {default_cache_dir()}) [env GITOPS_AGENT_CACHE_DIR]")
    parser.add_argument("--fetch-timeout", type=flags.number(0, 3600, above=True), default=_env("FETCH_TIMEOUT", "60"),
                        help="seconds a Git fetch may take; above 0, at most 3600 (default: 60) "
                             "[env GITOPS_AGENT_FETCH_TIMEOUT]")
    flags.add_credential_flags(parser)
    flags.add_submodules_switch(parser)
    flags.add_snippets_switch(parser)
    flags.add_security_profile_flag(parser)
    flags.add_log_flags(parser, _env)
    sourceflags.add_output_flags(parser)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """``validate``: prints each problem on stderr (``error: file:line: field: message``) and
    the report on stdout (text: the verdict line); returns 0 (valid) or 2 (invalid, or
    unreadable source).
    Raises ``flags.UsageError`` for flags that do not go together or an unreadable token file."""
    if args.ref and not args.repo:
        raise flags.UsageError(f"{flags.shown(args.ref)} is not allowed without --repo (without --repo, "
                               "--path is a directory on disk)", flag="--ref")
    if args.repo:
        flags.cache_dir(args.cache_dir)
    creds = sourceflags.credentials(args) if args.repo else None
    result = validate.run(path=args.path, repo=args.repo, ref=args.ref, namespace=args.namespace,
                          cache_dir=args.cache_dir, fetch_timeout=args.fetch_timeout, credentials=creds,
                          submodules=args.submodules, allow_snippets=args.allow_ingress_snippets,
                          default_profile=args.default_security_profile)
    code = exitcodes.OK if result.ok else exitcodes.FAILED
    logging.getLogger("agent.validate").info("validated %s", source.redact(args.repo or args.path, args.repo), extra={
        "fields": {"commit": result.commit, "files": result.files, "applications": len(result.manifests),
                   "problems": len(result.errors) + bool(result.fatal), "seconds": round(result.seconds, 3)}})
    doc = output.validate_document(result, exit_code=code,
                                   source=passrun.report_source(args.repo, args.ref, args.path))
    for error in doc["errors"]:  # every problem on stderr, whatever the report's format
        logs.problem(source.redact(output.error_line(error), args.repo),
                     {k: v for k, v in error.items() if k in ("file", "line", "field") and v is not None})
    sys.stderr.flush()  # the problems, then the verdict, also on one terminal
    passrun.emit(source.redact(output.render(doc, args.output), args.repo))
    return code


COMMAND = Command(
    help="validate Application YAML without a cluster",
    description="Check every *.yaml/*.yml under --path (a directory on disk, or with --repo a "
                "directory in a Git commit) as sync would, plus what the API server would refuse: "
                "YAML syntax, the Application schema from crd.yaml, DNS-1123 names, duplicate "
                "Applications, unknown fields, label and annotation syntax. Needs no cluster and no "
                "kubeconfig; reports every problem in one run.",
    epilog=EPILOG, arguments=arguments, run=run)
