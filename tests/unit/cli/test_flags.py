"""agent.flags: every type's accepted and refused values, and how a refusal reads."""

from __future__ import annotations

import argparse
from fractions import Fraction

import pytest

from agent.cli import flags, nametypes

SECONDS = flags.number(1, 86400)
GRACE = flags.number(0, 3600)
TIMEOUT = flags.number(0, 3600, above=True)
LEASE = flags.number(3, 3600, integer=True)


@pytest.mark.parametrize("convert, text, value", [
    (SECONDS, "1", 1.0), (SECONDS, "60", 60.0), (SECONDS, " 2.5 ", 2.5), (SECONDS, "86400", 86400.0),
    (SECONDS, "1e3", 1000.0), (SECONDS, ".5e1", 5.0), (SECONDS, "+7", 7.0), (SECONDS, "90s", 90.0),
    (SECONDS, "5m", 300.0), (SECONDS, "1h30m", 5400.0), (SECONDS, "1.5h", 5400.0), (SECONDS, "1500ms", 1.5),
    (SECONDS, "2s500ms", 2.5), (SECONDS, " 10m ", 600.0), (SECONDS, "24h", 86400.0), (SECONDS, "1m0.5s", 60.5),
    (GRACE, "0s", 0.0), (LEASE, " 15 ", 15), (LEASE, "+15", 15), (LEASE, "1m", 60), (LEASE, "0.55h", 1980),
    (LEASE, "+1m", 60), (SECONDS, "1.1h", 3960.0),
    (GRACE, "0", 0.0), (TIMEOUT, "0.5", 0.5), (LEASE, "15", 15), (LEASE, "3", 3),
    (flags.log_level, "info", "INFO"), (flags.log_level, "WARNING", "WARNING"),
    (flags.choice("text", "json"), "JSON", "json"),
    (nametypes.dns_label, "team-web", "team-web"), (nametypes.dns_subdomain, "gitops-agent.v1", "gitops-agent.v1"),
    (nametypes.label_value, "apps_main.v2", "apps_main.v2"), (nametypes.http_addr, ":8080", ":8080"),
    (nametypes.http_addr, "127.0.0.1:0", "127.0.0.1:0"), (nametypes.http_addr, "localhost:8080", "localhost:8080"),
    (nametypes.http_addr, "0.0.0.0:65535", "0.0.0.0:65535"), (flags.non_empty, "x", "x"),
    (nametypes.namespace_patterns, "team-*, web ,app-?", ("team-*", "web", "app-?")),
])
def test_accepted(convert, text, value):
    assert convert(text) == value


@pytest.mark.parametrize("convert, text, rule", [
    (SECONDS, "-5", ">= 1 and <= 86400"), (SECONDS, "0", ">= 1"), (SECONDS, "86401", "<= 86400"),
    (SECONDS, "inf", "number of seconds"), (SECONDS, "nan", "number of seconds"), (SECONDS, "", "number"),
    (SECONDS, "1_0", "number of seconds"), (SECONDS, "1 0", "number of seconds"), (SECONDS, "0x10", "number"),
    (SECONDS, "5 m", "or a duration such as 90s, 5m or 1h30m"), (SECONDS, "5M", "duration"), (SECONDS, "1d", "duration"),
    (SECONDS, "m", "duration"), (SECONDS, "-5m", "duration"), (SECONDS, "25h", "<= 86400"), (SECONDS, "500ms", ">= 1"),
    (LEASE, "1500ms", "whole number"), (LEASE, "1_5", "whole number"), (LEASE, "+", "whole number"),
    (GRACE, "-1", ">= 0"), (TIMEOUT, "0", "> 0"),
    (TIMEOUT, "-1", "> 0"), (LEASE, "2", ">= 3"), (LEASE, "4.5", "whole number"),
    (flags.log_level, "verbose", "DEBUG, INFO, WARNING, ERROR"), (flags.choice("text", "json"), "xml", "text, json"),
    (nametypes.dns_label, "Team", "DNS-1123 label"), (nametypes.dns_label, "a" * 64, "DNS-1123 label"),
    (nametypes.dns_subdomain, "a_b", "DNS-1123 subdomain"), (nametypes.label_value, "-x", "label value"),
    (nametypes.label_value, "", "label value"), (nametypes.http_addr, "8080", "HOST:PORT"),
    (nametypes.http_addr, ":70000", "HOST:PORT"), (nametypes.http_addr, ":http", "HOST:PORT"),
    (nametypes.http_addr, "bad_host:8080", "an IPv4 address or a host name"), (nametypes.http_addr, "256.0.0.1:80", "HOST:PORT"),
    (nametypes.http_addr, "1.2.3:80", "HOST:PORT"), (nametypes.http_addr, "[::1]:8080", "HOST:PORT"),
    (nametypes.http_addr, "a..b:80", "HOST:PORT"), (nametypes.http_addr, "-web:80", "HOST:PORT"),
    (nametypes.http_addr, "a" * 64 + ":80", "HOST:PORT"), (nametypes.http_addr, ":\u00b2", "HOST:PORT"),
    (flags.non_empty, "  ", "non-empty"), (flags.readable_file, "/nonexistent/token", "No such file"),
    (flags.readable_file, "/", "directory"), (nametypes.namespace_patterns, ",", "namespace names or globs"),
    (nametypes.namespace_patterns, "Kube-System", "namespace names or globs"),
])
def test_refused_with_the_value_and_the_rule(convert, text, rule):
    with pytest.raises(argparse.ArgumentTypeError) as err:
        convert(text)
    assert repr(text) in str(err.value) and rule in str(err.value)


@pytest.mark.parametrize("text, problem", [
    ("", "it is empty"), ("8080", "there is no port: the ':' before it is missing (did you mean ':8080'?)"),
    ("localhost", "there is no port: the ':' before it is missing"), ("127.0.0.1:", "there is no port after the ':'"),
    (":http", "the port 'http' is not a number"), (":\u00b2", "the port '\u00b2' is not a number"),
    (":-1", "the port '-1' is not a number"), (":70000", "the port 70000 is out of range (0 to 65535)"),
    (":99999999999", "the port 99999999999 is out of range (0 to 65535)"),
    ("[::1]:8080", "the host '[::1]' is an IPv6 address; the server listens on IPv4 only"),
    ("::1:8080", "the host '::1' is an IPv6 address"),
    ("256.0.0.1:80", "the host '256.0.0.1' is not an IPv4 address (four numbers from 0 to 255, separated by dots)"),
    ("1.2.3:80", "the host '1.2.3' is not an IPv4 address"), ("bad_host:80", "the host 'bad_host' is not a host name ("),
    ("-web:80", "the host '-web' is not a host name"), ("a..b:80", "the host 'a..b' is not a host name"),
    ("a" * 64 + ":80", "is not a host name (letters, digits and '-' in labels of 1 to 63 characters"),
])
def test_a_bad_http_addr_names_what_is_wrong_after_the_rule(text, problem):
    with pytest.raises(argparse.ArgumentTypeError) as err:
        nametypes.http_addr(text)
    message = str(err.value)
    assert message.startswith(f"{text!r} is not allowed: must be HOST:PORT with HOST empty (every interface), an IPv4 "
                              "address or a host name, and a port from 0 to 65535 (e.g. :8080 or 127.0.0.1:8080); ")
    assert problem in message.split("; ", 1)[1]


def test_an_http_addr_port_with_leading_zeros_is_its_number():
    assert nametypes.http_addr(":08080") == ":08080"


def test_an_http_host_name_that_does_not_resolve_is_refused_with_why(monkeypatch):
    import socket

    def no_such_host(host, *args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    with pytest.raises(argparse.ArgumentTypeError) as err:
        nametypes.http_addr("metrics.example:9090")
    assert str(err.value) == ("'metrics.example:9090' is not allowed: must be HOST:PORT with HOST empty (every "
                              "interface), an IPv4 address or a host name, and a port from 0 to 65535 (e.g. :8080 or "
                              "127.0.0.1:8080); 'metrics.example' does not resolve to an IPv4 address (Name or "
                              "service not known)")
    assert nametypes.http_addr("127.0.0.1:9090") == "127.0.0.1:9090"  # an address is never looked up


def test_a_value_from_the_environment_names_the_variable(monkeypatch):
    monkeypatch.setenv("GITOPS_AGENT_INTERVAL", "-5")
    raw = flags.env("INTERVAL", "60")
    with pytest.raises(argparse.ArgumentTypeError, match=r"GITOPS_AGENT_INTERVAL='-5' is not allowed"):
        SECONDS(raw)
    monkeypatch.delenv("GITOPS_AGENT_INTERVAL")
    assert flags.env("INTERVAL", "60") == "60"


@pytest.mark.parametrize("text, value", [("true", True), ("YES", True), (" 1", True), ("On", True),
                                         ("false", False), ("no", False), ("0", False), ("OFF", False)])
def test_boolean_words(text, value):
    assert flags.boolean(text) is value


@pytest.mark.parametrize("text", ["maybe", "", "2", "y"])
def test_boolean_refuses_other_words(monkeypatch, text):
    monkeypatch.setenv("GITOPS_AGENT_PRUNE", text)
    with pytest.raises(argparse.ArgumentTypeError, match=r"GITOPS_AGENT_PRUNE=.* is not allowed: must be a boolean"):
        flags.boolean(flags.env("PRUNE"))


def _switches() -> flags.Parser:
    parser = flags.Parser(prog="gitops-agent sync")
    flags.switch(parser, "--prune", variable="PRUNE", default=True, help="x")
    flags.switch(parser, "--allow-empty", variable="ALLOW_EMPTY", default=False, negatable=False, help="x")
    return parser


@pytest.mark.parametrize("env, argv, prune, allow_empty", [
    ({}, [], True, False), ({"GITOPS_AGENT_PRUNE": "off", "GITOPS_AGENT_ALLOW_EMPTY": "yes"}, [], False, True),
    ({"GITOPS_AGENT_PRUNE": "off"}, ["--prune"], True, False),  # a flag wins over its variable
    ({"GITOPS_AGENT_PRUNE": "maybe", "GITOPS_AGENT_ALLOW_EMPTY": "x"}, ["--no-prune", "--allow-empty"], False, True),
])
def test_switch_reads_its_variable_only_when_the_flag_is_not_given(monkeypatch, env, argv, prune, allow_empty):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = _switches().parse_args(argv)
    assert (args.prune, args.allow_empty) == (prune, allow_empty)


def test_a_bad_switch_variable_is_the_parsers_one_line(monkeypatch, capsys):
    monkeypatch.setenv("GITOPS_AGENT_PRUNE", "maybe")
    parser = _switches()  # building the parser never fails: the variable is read while parsing
    with pytest.raises(SystemExit) as stop:
        parser.parse_args([])
    assert stop.value.code == 2
    assert capsys.readouterr().err == (
        "gitops-agent sync: error: argument --prune/--no-prune: GITOPS_AGENT_PRUNE='maybe' is not allowed: "
        "must be a boolean (true/false, yes/no, 1/0 or on/off) (see gitops-agent sync --help)\n")


def test_usage_line_is_worded_as_argparse_words_a_bad_value(monkeypatch):
    monkeypatch.setattr(flags, "prog_name", lambda: "gitops-agent")
    err = flags.UsageError("'main' is not allowed without --repo", flag="--ref")
    assert flags.usage_line("validate", err) == ("gitops-agent validate: error: argument --ref: 'main' is not "
                                                 "allowed without --repo (see gitops-agent validate --help)")
    assert flags.usage_line(None, flags.UsageError("x")) == "gitops-agent: error: x (see gitops-agent --help)"


def test_read_token_file(tmp_path, monkeypatch):
    token = tmp_path / "token"
    token.write_text(" s3cret\n")
    assert flags.read_token_file(str(token)) == "s3cret"
    token.write_bytes(b"\xff\xfe")
    with pytest.raises(flags.UsageError, match=r"'.*token' is not allowed: must be a readable UTF-8 text file") as err:
        flags.read_token_file(str(token))
    assert err.value.flag == "--git-token-file"
    monkeypatch.setenv("GITOPS_AGENT_GIT_TOKEN_FILE", str(tmp_path / "missing"))
    with pytest.raises(flags.UsageError, match=r"GITOPS_AGENT_GIT_TOKEN_FILE='.*missing' is not allowed"):
        flags.read_token_file(flags.env("GIT_TOKEN_FILE"))


@pytest.mark.parametrize("text, token, why", [("s3cret", "s3cret", None), ("s3cret\n", "s3cret", None),
                                              (" pass word\r\n", "pass word", None), ("", "", "it is empty"),
                                              (" \n\t", "", "it is empty"),
                                              ("a\nb\n", "a\nb", "it holds more than one line"),
                                              ("a\rb", "a\rb", "it holds more than one line")])
def test_one_line_token_is_the_rule_of_every_token(text, token, why):
    assert flags.one_line_token(text) == (token, why)


def test_the_token_variable_is_read_by_the_token_files_rule(monkeypatch):
    from agent.cli import sourceflags

    args = argparse.Namespace(git_token_file=None, git_username=None, repo="https://git.example/apps.git",
                              ssh_key_file=None, known_hosts_file=None)
    monkeypatch.delenv("GITOPS_AGENT_GIT_TOKEN", raising=False)
    assert sourceflags.credentials(args).token is None
    monkeypatch.setenv("GITOPS_AGENT_GIT_TOKEN", "s3cret\n")
    assert sourceflags.credentials(args).token == "s3cret"
    monkeypatch.setenv("GITOPS_AGENT_GIT_TOKEN", "")
    with pytest.raises(flags.UsageError, match=r"GITOPS_AGENT_GIT_TOKEN='' is not allowed") as err:
        sourceflags.credentials(args)
    assert err.value.flag == "--git-token-file"


@pytest.mark.parametrize("argv0, prog", [("/usr/local/bin/gitops-agent", "gitops-agent"),
                                         ("/app/agent/__main__.py", "python -m agent"), ("-c", "python -m agent")])
def test_prog_name(argv0, prog):
    assert flags.prog_name(argv0) == prog


def test_parser_error_is_one_line(capsys):
    parser = flags.Parser(prog="gitops-agent")
    parser.add_argument("--interval", type=SECONDS)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["--interval", "-5"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--interval" in err and "'-5'" in err


def test_cache_dir_must_be_a_directory_or_creatable_as_one(tmp_path):
    (tmp_path / "file").write_text("x")
    assert flags.cache_dir(str(tmp_path)) == str(tmp_path)
    assert flags.cache_dir(str(tmp_path / "new" / "deeper")) == str(tmp_path / "new" / "deeper")
    with pytest.raises(flags.UsageError) as err:
        flags.cache_dir(str(tmp_path / "file"))
    assert err.value.flag == "--cache-dir" and str(err.value) == (
        f"{str(tmp_path / 'file')!r} is not allowed: must be a directory this user can read and write, or a path "
        "where one can be created (it is not a directory)")
    with pytest.raises(flags.UsageError, match=r"\(.*/file' is not a directory\)"):
        flags.cache_dir(str(tmp_path / "file" / "sub"))
    with pytest.raises(flags.UsageError, match=r"^GITOPS_AGENT_CACHE_DIR="):
        flags.cache_dir(flags.EnvValue(str(tmp_path / "file"), "GITOPS_AGENT_CACHE_DIR"))



def test_a_cache_dir_is_made_by_the_check_and_one_the_file_system_refuses_says_why(tmp_path):
    assert flags.cache_dir(str(tmp_path / "a" / "b")) and not (tmp_path / "a").exists()  # tried, and left nothing
    with pytest.raises(flags.UsageError) as err:  # /proc may be written to as root, never a directory made in it
        flags.cache_dir("/proc/gitops-agent-cache")
    assert str(err.value).endswith("(it cannot be created: No such file or directory)") \
        or "cannot be written" in str(err.value)


def test_a_cache_dir_through_a_symlink_to_nothing_is_refused(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    (tmp_path / "good").symlink_to(tmp_path)
    assert flags.cache_dir(str(tmp_path / "good" / "new")) == str(tmp_path / "good" / "new")
    with pytest.raises(flags.UsageError) as err:
        flags.cache_dir(str(tmp_path / "link"))
    assert str(err.value).endswith(f"(it is a symlink to {str(tmp_path / 'gone')!r}, which does not exist)")
    with pytest.raises(flags.UsageError) as err:
        flags.cache_dir(flags.EnvValue(str(tmp_path / "link" / "sub"), "GITOPS_AGENT_CACHE_DIR"))
    assert str(err.value).startswith("GITOPS_AGENT_CACHE_DIR=")
    assert str(err.value).endswith(f"({str(tmp_path / 'link')!r} is a symlink to {str(tmp_path / 'gone')!r}, "
                                   "which does not exist)")
    assert not (tmp_path / "gone").exists()

@pytest.mark.parametrize("text, seconds", [
    ("1ns", Fraction(1, 10**9)), ("3us", Fraction(3, 10**6)), ("3\u00b5s", Fraction(3, 10**6)),
    ("3\u03bcs", Fraction(3, 10**6)), ("2h3m4s", 7384), ("1.s", 1), (".5m", 30), ("+1s", 1), ("-1m", -60),
    ("1.1h", 3960), ("0.3s", Fraction(3, 10)), ("1", None), ("", None), ("1h 2m", None), ("s", None),
    ("1hh", None), ("1h-2m", None), ("+", None), ("--1s", None), ("1e3s", None), ("1S", None)])
def test_duration_seconds(text, seconds):
    """Exact, as Go's time.ParseDuration counts integer nanoseconds (1.1h is 3960 s, not 3960.0000000000005)."""
    assert flags.duration_seconds(text) == seconds


def test_a_plain_quantity_or_another_unit_takes_no_duration():
    with pytest.raises(argparse.ArgumentTypeError):
        flags.number(0, 1, unit="")("5m")
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        flags.number(1, 10, unit="requests")("5s")
    assert "duration" not in str(caught.value)


@pytest.mark.parametrize("env, argv, profile", [
    ({}, [], "none"),  # an upgrade changes no pod
    ({"GITOPS_AGENT_DEFAULT_SECURITY_PROFILE": "Restricted"}, [], "restricted"),
    ({"GITOPS_AGENT_DEFAULT_SECURITY_PROFILE": "restricted"}, ["--default-security-profile", "none"], "none"),
])
def test_default_security_profile_reaches_the_pass(monkeypatch, env, argv, profile):
    from agent.cli import sourceflags

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    parser = flags.Parser(prog="gitops-agent sync")
    sourceflags.add_source_flags(parser)
    args = parser.parse_args(["--repo", "/tmp/r", *argv])
    assert args.default_security_profile == profile
    assert sourceflags.options_from(args).default_security_profile == profile


def test_a_bad_default_security_profile_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv("GITOPS_AGENT_DEFAULT_SECURITY_PROFILE", "baseline")
    parser = flags.Parser(prog="gitops-agent explain")
    flags.add_security_profile_flag(parser)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args([])
    assert stop.value.code == 2
    assert capsys.readouterr().err == (
        "gitops-agent explain: error: argument --default-security-profile: GITOPS_AGENT_DEFAULT_SECURITY_PROFILE="
        "'baseline' is not allowed: must be one of restricted, none (see gitops-agent explain --help)\n")


def test_a_checkout_and_its_origins_url_are_one_source(tmp_path):
    """Issue 46: ``--repo CHECKOUT`` (origin set) and ``--repo URL`` make one source id and one
    recorded identity; ``--source-id`` wins and then no former id is taken over."""
    import subprocess

    from agent.cli import sourceflags
    from agent.source import mirror

    subprocess.run(["git", "init", "-q", str(tmp_path / "ci")], check=True)
    subprocess.run(["git", "-C", str(tmp_path / "ci"), "remote", "add", "origin", "git@github.com:Org/repo.git"],
                   check=True)

    def options(*argv):
        parser = flags.Parser(prog="gitops-agent sync")
        sourceflags.add_source_flags(parser)
        return sourceflags.options_from(parser.parse_args(["--path", "apps", *argv]))

    ci, served = options("--repo", str(tmp_path / "ci")), options("--repo", "https://github.com/Org/repo")
    assert (ci.source_id, ci.identity()) == (served.source_id, served.identity()) == \
        (mirror.source_id("https://github.com/Org/repo", "apps"), "github.com/Org/repo")  # the URL's, as before
    assert ci.former_source_ids == (mirror.source_id(str(tmp_path / "ci"), "apps"),) and not served.former_source_ids
    named = options("--repo", str(tmp_path / "ci"), "--source-id", "shop")
    assert (named.source_id, named.identity(), named.former_source_ids) == ("shop", "github.com/Org/repo", ())
