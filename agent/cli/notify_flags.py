"""Flags of ``sync`` and ``run`` for notifications and commit status, and the ``Settings`` they make.

Every flag also comes from ``GITOPS_AGENT_<NAME>``. The webhook URL and the tokens are read from
files (a mounted Secret), never from the command line, and no message here shows them: a
refused URL is described, not printed.
"""

from __future__ import annotations

import argparse
import os
import re
import urllib.parse

from agent.cli import flags
from agent.engine import news
from agent.notify import commitstatus, http, notifier


def reasons(text: str) -> frozenset[str]:
    """Type for ``--notify-on``: comma-separated reasons of ``news.REASONS`` (any case)."""
    out = set()
    for word in (w.strip() for w in text.split(",")):
        match = next((r for r in news.REASONS if r.lower() == word.lower()), None)
        if match is None:
            raise flags.not_allowed(text, "a comma-separated list of " + ", ".join(news.REASONS))
        out.add(match)
    return frozenset(out)


def http_url(text: str) -> str:
    """Type for a URL shown to people (``--status-page-url``, ``--commit-status-api-url``):
    an ``http://`` or ``https://`` URL with a host and a valid port (``http.url_problem``), and
    no ``user:password@`` (it would be shown)."""
    why = http.url_problem(text.strip())
    if why is None and "@" in urllib.parse.urlsplit(text.strip()).netloc:
        why = "it holds user:password@"
    if why:
        raise flags.not_allowed(text, f"an http:// or https:// URL ({why})")
    return text.strip()


_SEGMENT = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*")


def repository(text: str) -> str:
    """Type for ``--commit-status-repository``: ``OWNER/NAME``, or for GitLab a project path with
    subgroups (``group/sub/project``): segments of letters, digits, ``_``, ``.`` and ``-``
    (GitHub's, GitLab's and Gitea's rules for owner and repository names), no leading ``-``."""
    parts = text.strip().removesuffix(".git").split("/")
    if len(parts) < 2 or not all(_SEGMENT.fullmatch(p) and p not in (".", "..") for p in parts):
        raise flags.not_allowed(text, "OWNER/NAME (GitLab: the project's path, group/subgroup/project)")
    return "/".join(parts)


def add(parser: argparse.ArgumentParser) -> None:
    """The notification and commit status flags (``sync`` and ``run``)."""
    opt = flags.option
    opt(parser, "--notify-url-file", "NOTIFY_URL_FILE", "file holding the webhook URL to POST notifications to "
        "(it may hold a token; never shown)", type=flags.readable_file)
    opt(parser, "--notify-secret-file", "NOTIFY_SECRET_FILE", "file holding the key that signs each request: "
        "header X-Gitops-Agent-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 over '<t>.<body>'>",
        type=flags.readable_file)
    opt(parser, "--notify-on", "NOTIFY_ON", "comma-separated reasons to send: " + ", ".join(news.REASONS) +
        " (default: all)", type=reasons)
    opt(parser, "--notify-severity", "NOTIFY_SEVERITY", "info (everything) or error (only Degraded, Stalled, "
        "ApplyFailed) (default: info)", type=flags.choice("info", "error"), default="info", metavar="{info,error}")
    flags.switch(parser, "--notify-batch", variable="NOTIFY_BATCH", default=False, negatable=False,
                 help="send one pass's notifications as one request holding a list [env GITOPS_AGENT_NOTIFY_BATCH]")
    opt(parser, "--notify-timeout", "NOTIFY_TIMEOUT", "seconds one notification or commit status may take, "
        "retries included; sync waits at most this long for them at its end; above 0, at most 300 (default: "
        f"{notifier.DEFAULT_TIMEOUT:g})", type=flags.number(0, 300, above=True), default=f"{notifier.DEFAULT_TIMEOUT:g}")
    opt(parser, "--status-page-url", "STATUS_PAGE_URL", "a page people can open for the agent's status; "
        "sent in notifications and as the commit status's target_url", type=http_url)
    opt(parser, "--commit-status", "COMMIT_STATUS", "post a commit status to this Git host: github, gitlab or gitea",
        type=flags.choice(*commitstatus.HOSTS), metavar="{" + ",".join(commitstatus.HOSTS) + "}")
    opt(parser, "--commit-status-token-file", "COMMIT_STATUS_TOKEN_FILE", "file holding the Git host's API token "
        "(needed with --commit-status)", type=flags.readable_file)
    opt(parser, "--commit-status-context", "COMMIT_STATUS_CONTEXT", "the status's context (GitLab: name) "
        "(default: gitops-agent/<source id>)", type=flags.non_empty)
    opt(parser, "--commit-status-api-url", "COMMIT_STATUS_API_URL", "the host's API base URL (default: from --repo: "
        "https://api.github.com, https://HOST/api/v3, https://HOST/api/v4 for GitLab, https://HOST/api/v1 for Gitea)",
        type=http_url)
    opt(parser, "--commit-status-repository", "COMMIT_STATUS_REPOSITORY", "OWNER/NAME (GitLab: the project's path) "
        "(default: from --repo)", type=repository)


def _url(path: str) -> str:
    """The webhook URL in the file ``path``; UsageError when it is not an http(s) URL with a
    host and a valid port (``http.url_problem``; the URL itself is never in the message). A
    ``user:password@`` in it is sent as HTTP Basic auth."""
    url = flags.read_token_file(path, "--notify-url-file", URL_RULE)
    why = http.url_problem(url)
    if why:
        raise flags.UsageError(f"{flags.shown(path)} is not allowed: must be a file holding {URL_RULE} ({why}; "
                               "its content is not shown)", flag="--notify-url-file")
    return url


URL_RULE = "one http:// or https:// URL on one line"


def settings(args, source: str) -> notifier.Settings | None:
    """The notifier's settings from parsed flags, None when neither a webhook nor a commit
    status is asked for (or for a dry run). ``source``: the source id. Raises
    ``flags.UsageError`` naming the flag: unreadable files, a secret or filter without a URL, a
    commit status without a token or a repository it can find."""
    if getattr(args, "dry_run", False):
        return None
    url = _url(args.notify_url_file) if args.notify_url_file else None
    if not url and args.notify_secret_file:
        raise flags.UsageError(f"{flags.shown(args.notify_secret_file)} is not allowed without --notify-url-file "
                               "(it signs the webhook's requests)", flag="--notify-secret-file")
    secret = None
    if args.notify_secret_file:
        secret = flags.read_token_file(args.notify_secret_file, "--notify-secret-file",
                                       "one signing key on one line").encode()
    if url and args.notify_on and args.notify_severity == news.Severity.ERROR and \
            not any(news.SEVERITY[r] == news.Severity.ERROR for r in args.notify_on):
        errors = ", ".join(r for r in news.REASONS if news.SEVERITY[r] == news.Severity.ERROR)
        raise flags.UsageError(f"{flags.shown(','.join(sorted(args.notify_on)))} is not allowed with "
                               f"--notify-severity error: it would never send anything (the errors are {errors})",
                               flag="--notify-on")
    kind = args.commit_status
    if not url and not kind:
        return None
    token = api_url = repository = None
    if kind:
        if not args.commit_status_token_file:
            raise flags.UsageError(f"{flags.shown(kind)} is not allowed without --commit-status-token-file (the "
                                   "host's API token)", flag="--commit-status")
        token = flags.read_token_file(args.commit_status_token_file, "--commit-status-token-file")
        derived_api, derived_repo = commitstatus.from_repo(kind, args.repo or "")
        api_url, repository = args.commit_status_api_url or derived_api, args.commit_status_repository or derived_repo
        if not api_url or not repository:
            missing = "--commit-status-api-url" if not api_url else "--commit-status-repository"
            raise flags.UsageError(f"{flags.shown(kind)} is not allowed without {missing}: it cannot be derived from "
                                   "--repo", flag="--commit-status")
        if kind != "gitlab" and repository.count("/") != 1:
            raise flags.UsageError(f"{flags.shown(repository)} is not allowed with --commit-status {kind}: must be "
                                   "OWNER/NAME (only GitLab has subgroups)", flag="--commit-status-repository")
    return notifier.Settings(url=url, secret=secret, on=args.notify_on, severity=args.notify_severity,
                             batch=args.notify_batch, timeout=args.notify_timeout,
                             status_page_url=args.status_page_url, commit_status=kind, token=token,
                             context=args.commit_status_context or f"gitops-agent/{source}", api_url=api_url,
                             repository=repository, source=source, agent_pod=agent_pod())


def agent_pod(environ=None) -> tuple[str, str, str] | None:
    """(namespace, name, uid) of the Pod the agent runs in, from the downward API's variables
    ``POD_NAMESPACE``, ``POD_NAME`` and ``POD_UID`` (deploy/deployment.yaml sets them; uid ""
    when unset); None unless both namespace and name are set (outside a Pod, e.g. CI)."""
    env = os.environ if environ is None else environ
    namespace, name = env.get("POD_NAMESPACE", "").strip(), env.get("POD_NAME", "").strip()
    return (namespace, name, env.get("POD_UID", "").strip()) if namespace and name else None
