"""webhook: signature and token checking, payload parsing, event kinds and ref filtering (pure)."""

import hashlib
import hmac
import json
import urllib.parse

import pytest

from agent.server import webhook

SECRET = b"It's a Secret to Everybody"
BODY = b'{"ref": "refs/heads/main"}'


def sign(body: bytes = BODY, secret: bytes = SECRET) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def test_githubs_documented_example_signature():
    # the example from GitHub's "Validating webhook deliveries" page
    header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert webhook.authenticate(SECRET, b"Hello, World!", {"X-Hub-Signature-256": header}) == "github"


@pytest.mark.parametrize("headers, scheme", [
    ({"X-Hub-Signature-256": sign()}, "github"),
    ({"x-hub-signature-256": sign()}, "github"),  # header names are case-insensitive
    ({"X-Hub-Signature-256": sign().upper().replace("SHA256=", "sha256=")}, "github"),  # hex in upper case
    ({"X-Gitlab-Token": SECRET.decode()}, "gitlab"),
    ({"X-Gitlab-Token": SECRET.decode() + "\n"}, "gitlab"),  # surrounding whitespace is not part of it
    ({"X-Signature": sign()}, "generic"),
    ({"X-Hub-Signature-256": "sha256=00", "X-Gitlab-Token": SECRET.decode()}, "gitlab"),  # one valid is enough
])
def test_valid_credentials(headers, scheme):
    assert webhook.authenticate(SECRET, BODY, headers) == scheme


@pytest.mark.parametrize("headers", [
    {},
    {"X-Hub-Signature-256": ""},
    {"X-Hub-Signature-256": sign(b'{"ref": "refs/heads/evil"}')},  # signed another body
    {"X-Hub-Signature-256": sign(secret=b"wrong")},
    {"X-Hub-Signature-256": sign()[len("sha256="):]},  # no algorithm prefix
    {"X-Hub-Signature-256": sign().replace("sha256=", "sha1=")},
    {"X-Hub-Signature-256": sign()[:-1]},  # one hex digit short
    {"X-Hub-Signature": "sha1=" + hmac.new(SECRET, BODY, hashlib.sha1).hexdigest()},  # SHA-1 is not accepted
    {"X-Gitlab-Token": SECRET.decode()[:-1]},  # one character short
    {"X-Gitlab-Token": SECRET.decode()[:-1] + "x"},  # last character off
    {"X-Gitlab-Token": SECRET.decode() + "x"},  # one character too many
    {"X-Gitlab-Token": ""},
    {"X-Gitlab-Token": "ünïcode"},
    {"X-Signature": "sha256=" + "0" * 64},
    {"Authorization": "Bearer " + SECRET.decode()},  # not one of the accepted schemes
])
def test_invalid_or_missing_credentials(headers):
    assert webhook.authenticate(SECRET, BODY, headers) is None


def test_signature_covers_the_raw_bytes_not_the_parsed_json():
    reformatted = json.dumps(json.loads(BODY), indent=2).encode()
    assert webhook.authenticate(SECRET, reformatted, {"X-Hub-Signature-256": sign(BODY)}) is None


@pytest.mark.parametrize("body, content_type, ref", [
    (b'{"ref": "refs/heads/main", "after": "abc"}', "application/json", "refs/heads/main"),
    (b'{"ref": "refs/heads/main"}', "application/json; charset=utf-8", "refs/heads/main"),
    (b'{"zen": "Design for failure."}', "application/json", None),  # a ping: no ref
    (b'{}', "Application/JSON", None),
    (("payload=" + urllib.parse.quote('{"ref": "refs/tags/v1"}')).encode(), "application/x-www-form-urlencoded",
     "refs/tags/v1"),
])
def test_parse_payload_and_ref(body, content_type, ref):
    assert webhook.pushed_ref(webhook.parse_payload(body, content_type)) == ref


@pytest.mark.parametrize("body, content_type", [
    (b"", "application/json"),
    (b"not json", "application/json"),
    (b'{"ref": "refs/heads/main"', "application/json"),
    (b"[1, 2, 3]", "application/json"),
    (b'"refs/heads/main"', "application/json"),
    (b"\xff\xfe{}", "application/json"),
    (b"[" * 100_000 + b"]" * 100_000, "application/json"),  # nesting far beyond the recursion limit
    (b"payload=%7B%7D&payload=%7B%7D", "application/x-www-form-urlencoded"),
    (b"payload=%7B%7D&other=1", "application/x-www-form-urlencoded"),
    (b"other=%7B%7D", "application/x-www-form-urlencoded"),
    (b"payload=not-json", "application/x-www-form-urlencoded"),
    (b"&&&", "application/x-www-form-urlencoded"),
])
def test_malformed_payloads(body, content_type):
    with pytest.raises(webhook.Malformed):
        webhook.parse_payload(body, content_type)


@pytest.mark.parametrize("payload", [{"ref": 1}, {"ref": ""}, {"ref": ["refs/heads/main"]}, {"ref": "x" * 1025}])
def test_ref_must_be_a_short_string(payload):
    with pytest.raises(webhook.Malformed):
        webhook.pushed_ref(payload)


@pytest.mark.parametrize("headers, kind", [
    ({"X-GitHub-Event": "push"}, None),
    ({"X-GitHub-Event": "ping"}, "ping"),
    ({"X-GitHub-Event": "pull_request"}, "pull_request"),
    ({"X-Gitlab-Event": "Push Hook"}, None),
    ({"X-Gitlab-Event": "Tag Push Hook"}, None),
    ({"X-Gitlab-Event": "Merge Request Hook"}, "Merge Request Hook"),
    ({}, None),  # a generic sender: a push
])
def test_event_kind(headers, kind):
    assert webhook.event_kind(headers) == kind


@pytest.mark.parametrize("pushed, configured, head, wanted", [
    ("refs/heads/main", "main", None, True),
    ("refs/heads/dev", "main", None, False),
    ("refs/heads/main", "refs/heads/main", None, True),
    ("refs/tags/main", "refs/heads/main", None, False),
    ("refs/tags/v1", "v1", None, True),  # --ref names a tag
    ("refs/heads/main", "v1", None, False),
    ("refs/heads/main", "5f0c2e3d9a1b4c6d8e7f00112233445566778899", None, False),  # a SHA never moves
    ("refs/heads/main", "main", "dev", True),  # --ref wins over the remote HEAD
    ("refs/heads/main", None, "main", True),  # no --ref: the remote HEAD's branch
    ("refs/heads/feature", None, "main", False),
    ("refs/tags/v1", None, "main", False),
    ("refs/heads/feature", None, None, True),  # HEAD unknown: any branch
    (None, "main", None, True),  # a payload without a ref (a generic sender): always a pass
    ("refs/heads/mainline", "main", None, False),  # no prefix matching
])
def test_ref_wanted(pushed, configured, head, wanted):
    assert webhook.ref_wanted(pushed, configured, head) is wanted


def test_load_secret(tmp_path):
    path = tmp_path / "secret"
    path.write_text("s3cret\n")
    assert webhook.load_secret(str(path), None) == b"s3cret"
    assert webhook.load_secret(str(path), "from-env") == b"s3cret"  # the file wins
    assert webhook.load_secret(None, "from-env") == b"from-env"
    assert webhook.load_secret(None, None) is None


@pytest.mark.parametrize("content, env, rule", [
    (None, None, "must be a readable file (No such file or directory)"),
    ("", None, "must be a file holding a non-empty secret (it is empty)"),
    ("  \n", None, "must be a file holding a non-empty secret (it is empty)"),
])
def test_bad_secret_files_are_refused_by_flag(tmp_path, content, env, rule):
    path = tmp_path / "secret"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError) as err:
        webhook.load_secret(str(path), env)
    assert str(err.value) == f"{str(path)!r} is not allowed: {rule}" and err.value.flag == "--webhook-secret-file"


def test_an_empty_secret_in_the_environment_is_refused():
    with pytest.raises(ValueError, match=r"GITOPS_AGENT_WEBHOOK_SECRET=' ' is not allowed: must be a non-empty"):
        webhook.load_secret(None, " ")


def test_remote_head_keeps_the_last_answer_when_a_lookup_fails():
    answers = ["main", RuntimeError("remote down"), None]
    head = webhook.RemoteHead(lambda: lookup(), refresh=0)

    def lookup():
        answer = answers.pop(0)
        if not answers:
            head.stop()
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert head() is None  # unknown until a look-up answers
    head._loop()  # noqa: SLF001 - the thread's body, run here until the answers run out
    assert head() == "main" and not answers
