"""Command line: ``python -m agent sync --once ...``.

Every flag can also be given as an environment variable (named in ``--help``); a flag on the
command line wins over the variable.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from . import sync
from .kube import ApiError, Kube

EXIT_OK, EXIT_CHANGED, EXIT_FAILED = 0, 1, 2
EPILOG = """exit codes:
  0  success: the cluster matches the commit
  1  success, and the pass changed something (only with --exit-code)
  2  failure: the source could not be fetched, a file or Application was invalid, an API call
     failed, or pruning was refused; failing Applications and files are named on stderr
"""


def _env(name: str, default=None):
    return os.environ.get(f"GITOPS_AGENT_{name}", default)


def _env_bool(name: str, default: bool) -> bool:
    value = _env(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/gitops-agent`` (``~/.cache/gitops-agent``), the Git mirrors' home."""
    return str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gitops-agent")


def add_source_flags(parser: argparse.ArgumentParser) -> None:
    """Flags shared by every command that syncs: source, scope and cluster connection."""
    def flag(name, env, help_, **kw):
        parser.add_argument(name, help=f"{help_} [env GITOPS_AGENT_{env}]", **kw)

    flag("--repo", "REPO", "Git repository: local path, file://, https:// or ssh:// URL",
         default=_env("REPO"), required=_env("REPO") is None)
    flag("--ref", "REF", "branch, tag or commit SHA to sync (default: the remote's HEAD)", default=_env("REF"))
    flag("--path", "PATH", "directory inside the repository holding Application YAML (default: .)",
         default=_env("PATH", "."))
    flag("--namespace", "NAMESPACE", "namespace for Applications that name none (default: default)",
         default=_env("NAMESPACE", "default"))
    flag("--kubeconfig", "KUBECONFIG", "kubeconfig file (default: in-cluster, then $KUBECONFIG, ~/.kube/config)",
         default=_env("KUBECONFIG"))
    flag("--context", "CONTEXT", "kubeconfig context", default=_env("CONTEXT"))
    flag("--cache-dir", "CACHE_DIR", f"where Git mirrors are kept (default: {default_cache_dir()})",
         default=_env("CACHE_DIR", default_cache_dir()))
    flag("--fetch-timeout", "FETCH_TIMEOUT", "seconds a Git fetch may take (default: 60)",
         type=float, default=float(_env("FETCH_TIMEOUT", "60")))
    parser.add_argument("--prune", action=argparse.BooleanOptionalAction, default=_env_bool("PRUNE", True),
                        help="delete Applications (and children) the agent owns that Git no longer has "
                             "(default: on) [env GITOPS_AGENT_PRUNE=true|false]")
    flag("--allow-empty", "ALLOW_EMPTY", "allow a commit with no Applications to prune every Application "
         "the agent owns", action="store_true", default=_env_bool("ALLOW_EMPTY", False))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m agent",
                                     description="GitOps sync agent for Application resources.")
    parser.add_argument("--log-level", default=_env("LOG_LEVEL", "WARNING"),
                        help="DEBUG, INFO, WARNING or ERROR [env GITOPS_AGENT_LOG_LEVEL]")
    commands = parser.add_subparsers(dest="command", required=True)
    sync_parser = commands.add_parser(
        "sync", help="run one reconcile pass", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fetch the repository, apply its Applications and their Deployments and "
                    "Services, prune what Git no longer has, write status, print a summary.")
    sync_parser.add_argument("--once", action="store_true",
                             help="run one pass and exit (the only mode of 'sync'; kept for clarity)")
    sync_parser.add_argument("--exit-code", action="store_true",
                             help="exit 1 when the pass changed something (like git diff --exit-code)")
    add_source_flags(sync_parser)
    return parser


def options_from(args: argparse.Namespace) -> sync.Options:
    """sync.Options from parsed flags."""
    return sync.Options(repo=args.repo, ref=args.ref, path=args.path, namespace=args.namespace,
                        prune=args.prune, allow_empty=args.allow_empty, cache_dir=args.cache_dir,
                        fetch_timeout=args.fetch_timeout)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code (see EPILOG)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        kube = Kube(args.kubeconfig, args.context)
    except ApiError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED
    try:
        report = sync.run(kube, options_from(args))
    finally:
        kube.close()
    print(report.summary(), flush=True)
    for error in report.errors:
        print(f"error: {error}", file=sys.stderr)
    if not report.ok:
        return EXIT_FAILED
    return EXIT_CHANGED if args.exit_code and report.changed else EXIT_OK
