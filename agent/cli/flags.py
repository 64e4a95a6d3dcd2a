"""Command-line values checked at start-up: argparse types with ranges, and environment variables.

Why a module of its own: every flag can also come from a ``GITOPS_AGENT_*`` variable, and a bad
value must end the process at once with one line that names the flag (or the variable), the
value and what is allowed, exit code 2, and never a traceback. ``run --interval -5`` used to
spin at full CPU instead.

How: each flag gets a ``type`` from here, which raises ``argparse.ArgumentTypeError`` with the
rule. A variable's raw text is passed to argparse as the flag's default wrapped in ``EnvValue``;
argparse converts a string default with the flag's ``type`` only when the flag is not on the
command line (a flag wins over its variable), and the type names the variable in its message.
``Parser.error`` prints that message as one line (no usage block) and exits 2. Boolean flags
(``switch``) work the same way, with ``boolean`` as the type of their variable's text, so a
variable is read only by the subcommands that have its flag. A problem found after parsing (two
flags that do not go together, a file that cannot be read) is a ``UsageError`` printed in the
same words (``usage_line``). The types of names and addresses (namespaces, object names, label
values, ``--http-addr``) are in ``agent/cli/nametypes.py``.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import re
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

from agent.common.values import (MAX_TOKEN_FILE, TOKEN_RULE, EnvValue, UsageError, one_line_token, read_bounded, shown,
                                 version)

ENV_PREFIX = "GITOPS_AGENT_"
TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_ENV_IN_HELP = re.compile(r"\[env (" + ENV_PREFIX + r"[A-Z0-9_]+)\]\s*$")


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr (``PROG: error: MESSAGE (see PROG
    --help)``) followed by exit 2; subcommand parsers inherit it."""

    def add_argument(self, *args, **kwargs):
        """As argparse's; the action also records ``env_variable``: the variable named at the end
        of its help (``[env GITOPS_AGENT_X]``, as every flag's help ends), else None, unless
        ``switch`` or ``option`` set it. Read by ``agent.cli.reference``; changes no behaviour."""
        action = super().add_argument(*args, **kwargs)
        found = _ENV_IN_HELP.search(action.help or "")
        action.env_variable = found.group(1) if found else None
        return action

    def error(self, message: str):  # noqa: D401 (argparse API)
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unknown flag after a command is that command's error
        (``PROG diff: error: unrecognized arguments: --exit-code (see PROG diff --help)``):
        argparse reports it as the top-level parser's, which does not say which command. An
        unknown flag before the command is the top-level parser's error, reported before
        anything the command would miss (``PROG --bogus sync`` names ``--bogus``, not
        ``sync``'s missing ``--repo``)."""
        commands = next((a.choices for a in self._actions if isinstance(a, argparse._SubParsersAction)), {})
        self._refuse_unknown_before_command(sys.argv[1:] if args is None else list(args), commands)
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            owner = commands.get(getattr(parsed, "command", None), self)
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed


    def _refuse_unknown_before_command(self, args: list[str], commands: dict) -> None:
        """``self.error`` for the first flag before the command (or before ``--``) that is
        none of this parser's own (``--help``, ``--version`` and their abbreviations);
        a known command's flag there says that it goes after the command."""
        if not commands:
            return
        own = [s for a in self._actions for s in a.option_strings]
        for token in args:
            if token == "--" or token in commands or not token.startswith("-"):
                return
            name = token.split("=", 1)[0]
            if not any(s.startswith(name) for s in own if name.startswith("--") or s == name):
                after = next((c for c in commands if any(name in a.option_strings for a in commands[c]._actions)), None)
                hint = f" (a command's flags go after it: {self.prog} {after} {name} ...)" if after else ""
                self.exit(2, f"{self.prog}: error: unrecognized arguments: {token}{hint or f' (see {self.prog} --help)'}\n")


def usage_line(command: str | None, err: "UsageError") -> str:
    """The one line a ``UsageError`` ends the process with, worded as argparse words a bad
    value: ``PROG CMD: error: argument FLAG: MESSAGE (see PROG CMD --help)`` (no ``argument
    FLAG:`` when ``err.flag`` is None, no ``CMD`` when ``command`` is None)."""
    prog = f"{prog_name()} {command}" if command else prog_name()
    where = f"argument {err.flag}: " if err.flag else ""
    return f"{prog}: error: {where}{err} (see {prog} --help)"


def read_token_file(value: str, flag: str = "--git-token-file", holding: str = TOKEN_RULE) -> str:
    """The token in the file ``value`` (``one_line_token``). Raises UsageError naming ``flag``
    (or the variable, for an ``EnvValue``) when it cannot be read as UTF-8 text, holds more than
    ``MAX_TOKEN_FILE`` bytes (``/dev/zero`` is refused, not read until memory runs out), or holds
    nothing or more than one line: a fetch would silently go out anonymous or with a broken
    header. ``holding``: what the file should hold, for the message (``one URL on one line``)."""
    try:
        data = read_bounded(value)
        text = None if data is None else data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        why = getattr(err, "strerror", None) or ("not UTF-8 text" if isinstance(err, UnicodeDecodeError) else err)
        raise UsageError(f"{shown(value)} is not allowed: must be a readable UTF-8 text file ({why})",
                         flag=flag) from None
    if text is None:
        raise UsageError(f"{shown(value)} is not allowed: must be a file holding {holding} "
                         f"(it holds more than {MAX_TOKEN_FILE // 1024} KiB)", flag=flag)
    token, why = one_line_token(text)
    if why:
        raise UsageError(f"{shown(value)} is not allowed: must be a file holding {holding} ({why})", flag=flag)
    return token


def token_variable(name: str, flag: str) -> str | None:
    """The token in the environment variable ``name`` (``one_line_token``), None when it is
    unset. Raises UsageError naming ``flag`` and the variable when it is set but empty or blank
    (shown: it holds no secret) or holds a line break inside (not shown)."""
    value = os.environ.get(name)
    if value is None:
        return None
    token, why = one_line_token(value)
    if why:
        given = f"{name}={value!r}" if not token else f"{name} (its value is not shown)"
        raise UsageError(f"{given} is not allowed: must be {TOKEN_RULE}, or unset for none ({why})", flag=flag)
    return token


def prog_name(argv0: str | None = None) -> str:
    """The name the program was started by, for usage lines: ``gitops-agent`` when run as the
    installed console command, else ``python -m agent``."""
    name = Path(argv0 if argv0 is not None else sys.argv[0]).name
    return name if name and name not in ("__main__.py", "-c", "python", "python3") and not name.endswith(".py") \
        else "python -m agent"


def env(name: str, default: str | None = None) -> str | None:
    """Default for a flag: ``GITOPS_AGENT_<name>`` as an ``EnvValue`` when set, else ``default``
    (a plain string or None). Checked by the flag's ``type`` only when the flag is not given."""
    variable = ENV_PREFIX + name
    value = os.environ.get(variable)
    return default if value is None else EnvValue(value, variable)


def switch(parser: argparse.ArgumentParser, *names: str, variable: str, default: bool, help: str,
           negatable: bool = True) -> argparse.Action:
    """Add a boolean flag (``--x``/``--no-x`` when ``negatable``, else ``store_true``) whose
    default comes from ``GITOPS_AGENT_<variable>`` (true/false, yes/no, 1/0, on/off, any case),
    else ``default``. The variable is checked by argparse only when the flag is not on the command
    line and only by the subcommand that has the flag, so a bad value reads like any other:
    ``PROG sync: error: argument --prune/--no-prune: GITOPS_AGENT_PRUNE='maybe' is not allowed:
    must be a boolean ... (see PROG sync --help)``. Returns the argparse action."""
    action = parser.add_argument(*names, action=argparse.BooleanOptionalAction if negatable else "store_true",
                                 default=env(variable, default), help=help)
    action.type = boolean  # argparse converts a string default with the action's type
    action.env_variable = ENV_PREFIX + variable
    return action


def add_snippets_switch(parser: argparse.ArgumentParser) -> None:
    """``--allow-ingress-snippets`` (``sync``, ``diff``, ``run`` and ``validate``)."""
    switch(parser, "--allow-ingress-snippets", variable="ALLOW_INGRESS_SNIPPETS", default=False, negatable=False,
           help="allow Ingress annotations that inject configuration into the ingress controller (names ending in "
                "snippet: ingress-nginx's server-snippet, configuration-snippet, auth-snippet); without it an "
                "Application with one is refused, naming its file (default: off; the controller serves every "
                "namespace's hosts from that configuration) [env GITOPS_AGENT_ALLOW_INGRESS_SNIPPETS]")


def add_security_profile_flag(parser: argparse.ArgumentParser) -> None:
    """``--default-security-profile`` (``sync``, ``diff``, ``run``, ``explain``, which renders
    the children to show drift, and ``validate``, which refuses what the pass would under it): ``restricted`` or ``none``, default ``none``."""
    from agent.api.schema import SECURITY_PROFILES

    parser.add_argument(
        "--default-security-profile", default=env("DEFAULT_SECURITY_PROFILE", "none"),
        type=choice(*SECURITY_PROFILES), metavar="{" + ",".join(SECURITY_PROFILES) + "}",
        help="the spec.security.profile of Applications that name none: restricted renders what the Pod Security "
             "Standard restricted requires into every pod (runAsNonRoot, the RuntimeDefault seccomp profile, no "
             "privilege escalation, every capability dropped); none renders only what spec.security gives. "
             "Changing it rolls the pods of every Application without a profile (default: none) "
             "[env GITOPS_AGENT_DEFAULT_SECURITY_PROFILE]")


def option(parser: argparse.ArgumentParser, name: str, variable: str, help: str, **kwargs) -> argparse.Action:
    """Add the flag ``name`` whose default is ``GITOPS_AGENT_<variable>`` (``default`` in
    ``kwargs`` when the variable is unset; converted and checked by ``type`` like the flag), its
    help ending in ``[env GITOPS_AGENT_<variable>]``. Returns the argparse action."""
    default = kwargs.pop("default", None)
    action = parser.add_argument(name, default=env(variable, default), help=f"{help} [env {ENV_PREFIX}{variable}]",
                                 **kwargs)
    action.env_variable = ENV_PREFIX + variable
    return action


def add_kubeconfig_flags(parser: argparse.ArgumentParser) -> None:
    """``--kubeconfig`` and ``--context`` (and their variables), for every command that talks to
    the cluster. An empty value is refused: it would silently mean the default file or context."""
    option(parser, "--kubeconfig", "KUBECONFIG", "kubeconfig file (default: in-cluster, then $KUBECONFIG, "
           "~/.kube/config)", type=non_empty)
    option(parser, "--context", "CONTEXT", "kubeconfig context, one of the kubeconfig's contexts (default: its "
           "current-context)", type=non_empty)


def add_credential_flags(parser: argparse.ArgumentParser) -> None:
    """The repository's credentials, for every command that fetches: ``--git-token-file`` and
    ``--git-username`` (HTTPS), ``--ssh-key-file`` and ``--known-hosts-file`` (SSH), where they
    and fetches may go (``--allow-insecure-http``, ``--submodule-hosts``), and their variables. ``--git-username`` has no default here: None means "not given", so that a user
    written in ``--repo``'s URL can be told apart (``sourceflags.credentials``)."""
    option(parser, "--git-token-file", "GIT_TOKEN_FILE", "file holding an HTTPS token or password for the "
           "repository (or set GITOPS_AGENT_GIT_TOKEN)", type=readable_file)
    option(parser, "--git-username", "GIT_USERNAME", "user name sent with the token (default: the user written in "
           "--repo's URL, else git; one that differs from the URL's is refused)", type=non_empty)
    option(parser, "--ssh-key-file", "SSH_KEY_FILE", "private key for ssh:// repositories", type=readable_file)
    option(parser, "--known-hosts-file", "KNOWN_HOSTS_FILE", "known_hosts for ssh:// repositories (strict checking)",
           type=readable_file)
    switch(parser, "--allow-insecure-http", variable="ALLOW_INSECURE_HTTP", default=False, negatable=False,
           help="send the token over plain http:// to a host that is not loopback (refused by default: anyone on "
                "the way could read it) [env GITOPS_AGENT_ALLOW_INSECURE_HTTP]")
    option(parser, "--submodule-hosts", "SUBMODULE_HOSTS", "comma-separated hosts (names, addresses or globs, "
           "*.example.com) that submodules may be fetched from besides --repo's own host (default: none: a "
           "submodule elsewhere is refused)", type=host_patterns, default=None)


def add_submodules_switch(parser: argparse.ArgumentParser) -> argparse.Action:
    """``--submodules``/``--no-submodules`` (``GITOPS_AGENT_SUBMODULES``), one meaning for every
    command that reads Application YAML: ``sync``, ``diff``, ``run`` and ``validate`` (a commit
    with ``--repo``, else a submodule's checkout on disk)."""
    return switch(parser, "--submodules", variable="SUBMODULES", default=True,
                  help="follow Git submodules under --path; with --no-submodules a submodule there "
                       "fails the pass (default: on) [env GITOPS_AGENT_SUBMODULES]")


def host_patterns(text: str) -> tuple[str, ...]:
    """Type for ``--submodule-hosts``: comma-separated host names, IP addresses (IPv6 without
    brackets) or shell-style globs (``*.example.com``; ``*`` alone: every host); blanks around
    commas are ignored, letters are lowercased (DNS names are not case sensitive, RFC 4343).
    Returns the patterns as a tuple."""
    patterns = tuple(p.strip().lower() for p in text.split(",") if p.strip())
    rule = "comma-separated host names, IP addresses or globs (*.example.com), at least one"
    if not patterns or any(len(p) > 253 or not re.fullmatch(r"[a-z0-9.*?:_-]+", p) for p in patterns):
        raise not_allowed(text, rule)
    return patterns


def boolean(text: str) -> bool:
    """Type for a boolean variable: true/false, yes/no, 1/0 or on/off (any case, blanks
    around ignored); anything else (also an empty value) is refused."""
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise not_allowed(text, "a boolean (true/false, yes/no, 1/0 or on/off)")


def not_allowed(value: str, rule: str) -> argparse.ArgumentTypeError:
    """The error a type raises for ``value``: ``VALUE is not allowed: must be RULE``."""
    return argparse.ArgumentTypeError(f"{shown(value)} is not allowed: must be {rule}")


_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_DURATION_PART = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_DURATION_UNITS = {"ns": Fraction(1, 10**9), "us": Fraction(1, 10**6), "\u00b5s": Fraction(1, 10**6),
                   "\u03bcs": Fraction(1, 10**6), "ms": Fraction(1, 1000), "s": Fraction(1), "m": Fraction(60),
                   "h": Fraction(3600)}


def duration_seconds(text: str) -> Fraction | None:
    """Seconds in a Go duration (``time.ParseDuration``, what Flux's and Argo CD's intervals
    are written in): ``90s``, ``5m``, ``1h30m``, ``1.5h``, ``500ms``, a sign in front (``+1s``,
    ``-1s``), ``us`` or ``µs``; exact (``1.1h`` is 3960 seconds, no rounding), as a Fraction.
    None when ``text`` is not one (a plain number has no unit and is not a duration)."""
    sign, body = (-1 if text[:1] == "-" else 1), text[1:] if text[:1] in "+-" else text
    parts = _DURATION_PART.findall(body) if body else []
    if not parts or "".join(n + u for n, u in parts) != body:
        return None
    return sign * sum(Fraction(n) * _DURATION_UNITS[u] for n, u in parts)


def number(minimum: float | None = None, maximum: float | None = None, *, above: bool = False,
           integer: bool = False, unit: str = "seconds"):
    """Type for a finite number (``integer``: a whole number) in ``[minimum, maximum]``
    (``above``: strictly greater than ``minimum``), written in decimal digits (``1e3`` too, not
    ``1_000``; blanks around are ignored); with ``unit`` seconds, also a Go duration (``5m``,
    ``1h30m``: ``duration_seconds``; a whole number of seconds when ``integer``). Returns float or int; the error names the
    range and ``unit`` (none when empty, for a plain quantity such as a share), e.g. "must be a
    number of seconds > 0 and <= 3600"."""
    durations = unit == "seconds"
    kind = ("a whole number" if integer else "a number") + (f" of {unit}" if unit else "")

    parts = []
    if minimum is not None:
        parts.append(f"{'>' if above else '>='} {minimum:g}")
    if maximum is not None:
        parts.append(f"<= {maximum:g}")
    rule = f"{kind} {' and '.join(parts)}".strip()
    if durations:
        rule += ", or a duration such as 90s, 5m or 1h30m"

    def convert(text: str):
        bare = text.strip()
        if (_INTEGER if integer else _DECIMAL).fullmatch(bare):
            value = int(bare) if integer else float(bare)
        elif durations and (exact := duration_seconds(bare)) is not None and (not integer or exact.denominator == 1):
            value = int(exact) if integer else float(exact)
        else:
            raise not_allowed(text, rule)
        if not math.isfinite(value):
            raise not_allowed(text, rule)
        if minimum is not None and (value <= minimum if above else value < minimum):
            raise not_allowed(text, rule)
        if maximum is not None and value > maximum:
            raise not_allowed(text, rule)
        return value

    convert.__name__ = "number"
    convert.rule = rule  # type: ignore[attr-defined]
    return convert


def choice(*allowed: str, fold_case: bool = True):
    """Type for one of ``allowed`` (case-insensitive when ``fold_case``); returns the spelling
    in ``allowed``."""
    rule = "one of " + ", ".join(allowed)

    def convert(text: str) -> str:
        for option in allowed:
            if text == option or (fold_case and text.strip().lower() == option.lower()):
                return option
        raise not_allowed(text, rule)

    convert.__name__ = "choice"
    return convert


log_level = choice(*LOG_LEVELS)
"""Type for ``--log-level``: DEBUG, INFO, WARNING or ERROR (any case)."""


def add_log_flags(parser, env, default_level: str = "WARNING") -> None:
    """``--log-level`` and ``--log-format``, as every command takes them; ``env(name, default)``
    reads ``GITOPS_AGENT_<name>``; ``default_level``: what the help names as the default."""
    parser.add_argument("--log-level", default=env("LOG_LEVEL"), type=log_level,
                        help=f"DEBUG, INFO, WARNING or ERROR (default: {default_level}) [env GITOPS_AGENT_LOG_LEVEL]")
    parser.add_argument("--log-format", type=choice("text", "json"), default=env("LOG_FORMAT", "text"),
                        metavar="{text,json}",
                        help="log lines and errors on stderr as text or one JSON object per line (default: text) "
                             "[env GITOPS_AGENT_LOG_FORMAT]")


def non_empty(text: str) -> str:
    """Type for a string that must not be empty or blank."""
    if not text.strip():
        raise not_allowed(text, "a non-empty string")
    return text


REPO_SCHEMES = ("file", "https", "http", "ssh", "git+ssh", "ssh+git", "git")  # Git's transports the agent reads
REPO_RULE = ("a local path, an scp-like user@host:path, or a URL whose scheme is one of "
             + ", ".join(REPO_SCHEMES))
_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def repo(text: str) -> str:
    """Type for ``--repo``: not blank, and a URL only with a scheme of ``REPO_SCHEMES`` (Git's
    own transports; ``ftp://`` and the like are refused before Git is run). Returns it without
    the blanks around it (a variable from a Secret made from a file often ends in a newline);
    a line break or tab inside is refused."""
    bare = non_empty(text).strip()
    scheme = _URL_SCHEME.match(bare)
    if (scheme and scheme.group(1).lower() not in REPO_SCHEMES) or any(c in bare for c in "\r\n\t"):
        raise not_allowed(text, REPO_RULE)
    return bare



CACHE_DIR_RULE = "a directory this user can read and write, or a path where one can be created"


def cache_dir(value: str, flag: str = "--cache-dir") -> str:
    """``value`` when it is a directory this user may read and write, or can be created as one
    (its nearest existing parent is a directory this user may write to). Raises UsageError
    naming ``flag`` (or the variable, for an ``EnvValue``) and why otherwise: a file
    (``/etc/passwd``), a symlink to nothing (on the way), a directory that may not be written
    (its mode, a read-only file system) or searched. Checked only by a command about to fetch,
    before anything else runs, so a bad cache directory never fails ``validate --path`` and
    never surfaces as a raw OS error from Git or the lock. A probe directory of its own is
    made and removed in the nearest existing parent, so a file system that refuses it
    (``/proc``) is caught, a command refused for another reason leaves nothing behind, and
    processes checking one shared cache at once never trip over each other."""
    given = Path(value).absolute()

    def refuse(why: str) -> UsageError:
        return UsageError(f"{shown(value)} is not allowed: must be {CACHE_DIR_RULE} ({why})", flag=flag)

    def name(path: Path) -> str:
        return "it" if path == given else repr(str(path))
    existing = given
    try:
        while not existing.exists() and existing != existing.parent:
            if existing.is_symlink():  # exists() follows the link: it points to nothing
                raise refuse(f"{name(existing)} is a symlink to {os.readlink(existing)!r}, which does not exist")
            existing = existing.parent
        is_dir = existing.is_dir()
    except OSError as err:  # a parent that may not be searched (PermissionError)
        raise refuse(f"{err.strerror or err}: {str(err.filename or existing)!r}") from None
    if not is_dir:
        raise refuse(f"{name(existing)} is not a directory")
    needed = (("read", os.R_OK), ("written", os.W_OK), ("searched", os.X_OK))[0 if existing == given else 1:]
    missing = [word for word, mode in needed if not os.access(existing, mode)]
    if missing:
        try:
            read_only = "written" in missing and bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
        except OSError:
            read_only = False
        why = os.strerror(errno.EROFS if read_only else errno.EACCES)
        what = " or ".join(missing) + ("" if existing == given else " (to create the cache directory in it)")
        raise refuse(f"{name(existing)} cannot be {what} by this user: {why}")
    if existing != given:  # a file system may refuse what access() allows (/proc): try, and leave nothing
        try:  # a probe of our own, never `given`: other processes sharing the cache may be making it now
            os.rmdir(tempfile.mkdtemp(prefix=".gitops-agent-probe-", dir=existing))
        except OSError as err:
            raise refuse(f"it cannot be created: {err.strerror or err}") from None
    return value


def readable_file(text: str) -> str:
    """Type for a file the agent must read (a token, key or known_hosts file): it must exist
    and be readable now; the error says why not (e.g. "No such file or directory")."""
    try:
        with open(text, "rb"):
            pass
    except OSError as err:
        raise not_allowed(text, f"a readable file ({err.strerror or err})") from None
    if Path(text).is_dir():
        raise not_allowed(text, "a readable file (it is a directory)")
    return text
