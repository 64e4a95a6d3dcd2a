"""Unit tests for agent.manifests.loader.load and agent.schema."""

import time

import pytest
from jsonschema import Draft202012Validator

from agent.api.schema import API_VERSION, GROUP, KIND, PLURAL, SPEC_SCHEMA, STRICT_SPEC_SCHEMA, VERSION
from agent.manifests.loader import LoadResult, Manifest, ManifestError, Rejected, load
from agent.manifests.nodes import SURROGATE
from agent.manifests.specrules import WORKER_INGRESS_RULE, WORKER_PROBE_RULE
from tests.support import ORIGINAL_APPLICATION as EXAMPLE

ALLOWED_SPEC = ("args, autoscaling, command, disruptionBudget, env, envFrom, files, image, imagePullSecrets, "
                "ingress, livenessProbe, placement, podAnnotations, podLabels, port, ports, readinessProbe, replicas, "
                "resources, rollout, schedules, security, serviceAccountName, startupProbe, suspend, tasks, "
                "terminationGracePeriodSeconds, volumes")


def app(name="nginx", namespace=None, spec="  image: nginx:latest\n  replicas: 1\n  port: 80\n"):
    ns = f"  namespace: {namespace}\n" if namespace is not None else ""
    return (f"apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata:\n  name: {name}\n{ns}"
            f"spec:\n{spec}")


def run(files, namespace="default", **kw) -> LoadResult:
    return load({p: t.encode() if isinstance(t, str) else t for p, t in files.items()}, namespace, **kw)


def only_error(result: LoadResult) -> ManifestError:
    assert result.manifests == []
    assert len(result.errors) == 1, result.errors
    return result.errors[0]


def test_example_loads_unchanged():
    result = run({"apps/nginx.yaml": EXAMPLE})
    assert result.errors == []
    assert result.manifests == [Manifest(
        namespace="default", name="nginx", path="apps/nginx.yaml", line=1,
        body={"apiVersion": "heumsi.github.io/v1", "kind": "Application",
              "metadata": {"name": "nginx", "namespace": "default"},
              "spec": {"image": "nginx:latest", "replicas": 1, "port": 80}})]


@pytest.mark.parametrize("value, parsed", [("true", True), ("false", False)])
def test_suspend_is_an_optional_boolean_kept_in_the_body(value, parsed):
    result = run({"a.yaml": EXAMPLE + f"  suspend: {value}\n"})
    assert result.errors == []
    assert result.manifests[0].body["spec"] == {"image": "nginx:latest", "replicas": 1, "port": 80, "suspend": parsed}


def test_multi_document_file():
    text = "# apps\n---\n" + app("a") + "---\n---\n---\n" + app("b") + "---\n"
    result = run({"apps.yaml": text})
    assert result.errors == []
    assert [(m.name, m.line) for m in result.manifests] == [("a", 3), ("b", 14)]


@pytest.mark.parametrize("text", ["---\n", "---", "---\n---\n...\n", "# just a comment\n# another\n",
                                  "", "\n\n", "---\n# comment only\n---\n"])
def test_empty_files_are_fine(text):
    assert run({"empty.yaml": text}) == LoadResult([], [])


def test_bom_and_crlf():
    data = b"\xef\xbb\xbf" + EXAMPLE.replace("\n", "\r\n").encode()
    result = run({"win.yaml": data})
    assert result.errors == []
    assert result.manifests[0].body["spec"] == {"image": "nginx:latest", "replicas": 1, "port": 80}


@pytest.mark.parametrize("joint", ["---\n\ufeff", "---\r\n\ufeff", "--- \n\ufeff", "...\n---\n\ufeff",
                                   "--- # b.yaml\n\ufeff", "---\t# b\r\n\ufeff", "... # end\n---\n\ufeff"])
def test_a_bom_opening_a_later_document_is_dropped_as_kubectl_drops_it(joint):
    """Files saved with a BOM and joined keep one after each ``---``; YAML 1.2 allows it there."""
    data = ("\ufeff" + app("a") + joint + app("b")).encode()
    result = run({"joined.yaml": data})
    assert result.errors == [] and [m.name for m in result.manifests] == ["a", "b"]
    assert result.manifests[1].line == app("a").count("\n") + joint.count("\n") + 1


def test_a_bom_after_a_separator_with_other_text_is_not_dropped():
    result = run({"x.yaml": (app("a") + "---#x\n\ufeff" + app("b")).encode()})
    assert result.manifests == [] and [e.path for e in result.errors] == ["x.yaml"]  # ``---#x`` is no separator


def test_a_bom_inside_a_document_is_not_dropped():
    result = run({"x.yaml": app("a").replace("kind:", "\ufeffkind:").encode()})
    assert result.manifests == [] and result.errors


def test_crlf_line_numbers():
    data = EXAMPLE.replace("replicas: 1", "replicas: -1").replace("\n", "\r\n")
    assert only_error(run({"w.yaml": data})).line == 7


def test_non_utf8():
    err = only_error(run({"latin1.yaml": EXAMPLE.encode() + "  # caf\u00e9\n".encode("latin-1")}))
    assert (err.path, err.line) == ("latin1.yaml", 9)
    assert "UTF-8" in err.message


def test_tab_indentation_is_a_syntax_error_for_the_whole_file():
    text = app("good") + "---\n" + EXAMPLE.replace("  image:", "\timage:")
    err = only_error(run({"tab.yaml": text}))
    assert (err.path, err.line, err.field) == ("tab.yaml", 15, None)
    assert "invalid YAML" in err.message and "\\t" in err.message


def test_duplicate_key():
    text = EXAMPLE + "  replicas: 3\n"
    err = only_error(run({"dup.yaml": text}))
    assert (err.line, err.field) == (9, "spec.replicas")
    assert "duplicate key 'replicas'" in err.message and "line 7" in err.message


def test_duplicate_key_nested_in_flow_mapping_rejects_only_its_document():
    text = "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: a, name: b}\n" \
           "spec: {image: x, replicas: 1, port: 80}\n---\n" + app("ok")
    result = run({"f.yaml": text})
    assert [m.name for m in result.manifests] == ["ok"]
    assert [(e.line, e.field) for e in result.errors] == [(3, "metadata.name")]


BAD_REPLICAS = EXAMPLE.replace("replicas: 1", "replicas: -1")  # line 7
REPLICAS_RULE = "must be an integer between 0 and 2147483647 (got -1)"
YES_RULE = ('key yes is a boolean, not a string (YAML 1.1 reads unquoted yes/no, on/off and, for kubectl, y/n '
            'as booleans; kubectl would make it "true"); quote it: "yes"')


@pytest.mark.parametrize("text, expected", [
    # an unknown key under spec and an invalid replicas
    (BAD_REPLICAS + "  foo: 1\n", [(7, "spec.replicas", REPLICAS_RULE),
                                   (9, "spec.foo", f"unknown field (allowed: {ALLOWED_SPEC})")]),
    # a duplicate key hid the rest of its document
    (BAD_REPLICAS + "  port: 81\n", [(7, "spec.replicas", REPLICAS_RULE),
                                     (9, "spec.port", "duplicate key 'port' (first defined on line 8)")]),
    # so did a key that is not a string, and a value JSON cannot hold
    (BAD_REPLICAS + "  yes: 1\n", [(7, "spec.replicas", REPLICAS_RULE), (9, "spec.yes", YES_RULE)]),
    (BAD_REPLICAS.replace("port: 80", "port: .nan") + "spek: {}\n", [
        (7, "spec.replicas", REPLICAS_RULE), (8, "spec.port", "must be a finite number (JSON has no .inf or .nan)"),
        (9, "spek", "unknown field (did you mean spec?) (allowed: apiVersion, kind, metadata, spec, status)")]),
    (EXAMPLE.replace("metadata:\n  name: nginx\n", "metadata:\n  name: nginx\n  annotations:\n    x:\n    - 1\n"
                                                  "    - .inf\n  namspace: b\n"), [
        (6, "metadata.annotations.x", "must be a string, not a list"),
        (8, "metadata.annotations.x[1]", "must be a finite number (JSON has no .inf or .nan)"),
        (9, "metadata.namspace", "unknown field (did you mean metadata.namespace?) (allowed: name, namespace, "
                                 "labels, annotations)")]),
    # each duplicate key is named; nothing is said of a value under one (its meaning is not known)
    (BAD_REPLICAS + '  image: " "\n  image: x\n', [
        (7, "spec.replicas", REPLICAS_RULE), (9, "spec.image", "duplicate key 'image' (first defined on line 6)"),
        (10, "spec.image", "duplicate key 'image' (first defined on line 6)")]),
])
def test_every_problem_of_a_document_is_reported_at_once(text, expected, monkeypatch):
    from agent.manifests import loader as manifests

    result = run({"a.yaml": text})
    assert [(e.path, e.line, e.field, e.message) for e in result.errors] == [("a.yaml", *x) for x in expected]
    assert [(r.line, r.application, r.is_application, len(r.reasons)) for r in result.rejected] == [
        (1, "default/nginx", True, len(expected))]  # one refused Application, every reason
    monkeypatch.setattr(manifests, "_FAST", False)
    assert run({"a.yaml": text}) == result


def test_a_repeated_kind_or_name_leaves_the_document_unnamed():
    """A repeated apiVersion or kind: what the document is is not known, so only the duplicate is
    reported; a repeated name or namespace gives it no identity."""
    text = EXAMPLE.replace("kind: Application\n", "kind: Application\nkind: List\n").replace("replicas: 1", "replicas: -1")
    assert [(e.line, e.field) for e in run({"a.yaml": text}).errors] == [(3, "kind")]
    text = EXAMPLE.replace("  name: nginx\n", "  name: nginx\n  namespace: a\n  namespace: b\n")
    [rejected] = run({"a.yaml": text}).rejected
    assert (rejected.application, rejected.is_application, rejected.reasons) == (
        None, True, ("a.yaml:6: metadata.namespace: duplicate key 'namespace' (first defined on line 5)",))


def test_duplicate_identity_across_files():
    result = run({"a.yaml": EXAMPLE, "b/c.yml": "# x\n" + EXAMPLE, "other.yaml": app("other")})
    assert [m.name for m in result.manifests] == ["other"]
    assert [(e.path, e.line, e.field) for e in result.errors] == [  # the lines of metadata.name
        ("a.yaml", 4, "metadata.name"), ("b/c.yml", 5, "metadata.name")]
    for e in result.errors:
        assert "default/nginx" in e.message and "a.yaml:4" in e.message and "b/c.yml:5" in e.message


def test_same_name_in_different_namespaces_is_not_a_duplicate():
    result = run({"a.yaml": app("web", "team-a") + "---\n" + app("web")})
    assert result.errors == []
    assert [(m.namespace, m.name) for m in result.manifests] == [("default", "web"), ("team-a", "web")]


def test_duplicate_identity_counts_invalid_documents_too():
    result = run({"a.yaml": EXAMPLE, "b.yaml": EXAMPLE.replace("port: 80", "port: 0")})
    assert result.manifests == []
    assert {e.path for e in result.errors if "more than once" in e.message} == {"a.yaml", "b.yaml"}


RULE = ("is not a valid DNS-1123 label (lowercase letters, digits and '-', "
        "starting and ending with a letter or digit, at most 63 characters)")


@pytest.mark.parametrize("name", ["Office_Back", "-web", "web-", "a" * 64, "a.b", "''", "123x_"])
def test_invalid_name(name):
    err = only_error(run({"n.yaml": app(name)}))
    assert (err.line, err.field) == (4, "metadata.name")
    assert err.message.endswith(RULE)


def test_invalid_name_message():
    err = only_error(run({"apps/web.yaml": app("Office_Back")}))
    assert str(err) == f'apps/web.yaml:4: metadata.name: "Office_Back" {RULE}'


@pytest.mark.parametrize("name", ["a", "web-1", '"0"', "a" * 63])
def test_valid_names(name):
    assert [m.name for m in run({"n.yaml": app(name)}).manifests] == [name.strip('"')]


@pytest.mark.parametrize("value, message", [
    ("0", 'must be a string, not an integer (quote it: "0")'),
    ("123", 'must be a string, not an integer (quote it: "123")'),
    ("1.5", 'must be a string, not a number (quote it: "1.5")'),
    ("yes", "must be a string, not a boolean (YAML 1.1 reads unquoted true/false, yes/no and on/off as "
            "booleans; quote it)"),
    ("null", "must be a string, not null"), ("[web]", "must be a string, not a list"),
])
def test_a_name_or_namespace_that_is_not_a_string_says_so(value, message):
    """kubectl refuses a number where a string belongs; "not a valid DNS-1123 label" would
    send the user looking at the characters of a name that is fine once quoted."""
    for field, text, line in (("name", app(value), 4), ("namespace", app("web", value), 5)):
        err = only_error(run({"n.yaml": text}))
        assert (err.line, err.field, err.message) == (line, f"metadata.{field}", message)


def test_invalid_namespace():
    err = only_error(run({"n.yaml": app("web", "Team_A")}))
    assert (err.line, err.field) == (5, "metadata.namespace")
    assert err.message == f'"Team_A" {RULE}'


def test_missing_metadata_and_name():
    text = "apiVersion: heumsi.github.io/v1\nkind: Application\nspec: {image: x, replicas: 1, port: 80}\n"
    assert [(e.field, e.message) for e in run({"m.yaml": text}).errors] == [("metadata", "is required")]
    text = text.replace("spec:", "metadata: {labels: {a: b}}\nspec:")
    assert [(e.line, e.field, e.message) for e in run({"m.yaml": text}).errors] == [
        (3, "metadata.name", "is required")]


@pytest.mark.parametrize("line, replacement, field, message", [
    (7, 'replicas: "3"', "spec.replicas", 'must be an integer between 0 and 2147483647 (got "3")'),
    (7, "replicas: true", "spec.replicas", "must be an integer between 0 and 2147483647 (got true)"),
    (7, "replicas: 3.0", "spec.replicas", "must be an integer between 0 and 2147483647 (got 3.0)"),
    (7, "replicas: -1", "spec.replicas", "must be an integer between 0 and 2147483647 (got -1)"),
    (7, "replicas:", "spec.replicas", "must be an integer between 0 and 2147483647 (got null)"),
    (7, "replicas: 2147483648", "spec.replicas", "must be an integer between 0 and 2147483647 (got 2147483648)"),
    (8, "port: 0", "spec.port", "must be an integer between 1 and 65535 (got 0)"),
    (8, "port: 70000", "spec.port", "must be an integer between 1 and 65535 (got 70000)"),
    (8, 'port: "80"', "spec.port", 'must be an integer between 1 and 65535 (got "80")'),
    (6, 'image: ""', "spec.image", 'must be a non-empty string (got "")'),
    (6, "image: 5", "spec.image", "must be a non-empty string (got 5)"),
    (6, "image: [a]", "spec.image", 'must be a non-empty string (got ["a"])'),
    (6, 'image: " "', "spec.image", 'must be a container image reference with no whitespace (got " ")'),
    (6, 'image: "nginx :1"', "spec.image", 'must be a container image reference with no whitespace (got "nginx :1")'),
    (6, 'image: " nginx:1"', "spec.image", 'must be a container image reference with no whitespace (got " nginx:1")'),
    (6, 'image: "nginx:1 "', "spec.image", 'must be a container image reference with no whitespace (got "nginx:1 ")'),
    (6, 'image: "nginx:1\\n"', "spec.image",
     'must be a container image reference with no whitespace (got "nginx:1\\n")'),
    (9, 'suspend: "true"', "spec.suspend", 'must be true or false (got "true")'),
    (9, "suspend: 1", "spec.suspend", "must be true or false (got 1)"),
    (9, "suspend:", "spec.suspend", "must be true or false (got null)"),
    (9, "suspend: [true]", "spec.suspend", "must be true or false (got [true])"),
])
def test_wrong_spec_values(line, replacement, field, message):
    key = replacement.split(":")[0]
    original = {"replicas": "replicas: 1", "port": "port: 80", "image": "image: nginx:latest",
                "suspend": "port: 80"}[key]
    if key == "suspend":
        replacement = f"port: 80\n  {replacement}"
    err = only_error(run({"apps/web.yaml": EXAMPLE.replace(original, replacement)}))
    assert (err.path, err.line, err.field, err.message) == ("apps/web.yaml", line, field, message)


def test_every_spec_error_is_reported():
    text = EXAMPLE.replace("replicas: 1", "replicas: -1").replace("port: 80", "port: 0")
    assert [(e.line, e.field) for e in run({"a.yaml": text}).errors] == [(7, "spec.replicas"), (8, "spec.port")]


def test_missing_spec_field():
    text = "".join(line + "\n" for line in EXAMPLE.splitlines() if not line.strip().startswith("image"))
    err = only_error(run({"a.yaml": text}))
    assert (err.line, err.field, err.message) == (5, "spec.image", "is required")


def test_a_worker_has_no_port():
    text = "".join(line + "\n" for line in EXAMPLE.splitlines() if not line.strip().startswith("port"))
    assert run({"a.yaml": text}).errors == []
    assert run({"a.yaml": text + "  readinessProbe:\n    exec: {command: [\"true\"]}\n"}).errors == []


@pytest.mark.parametrize("extra, line, field, message", [
    ("  ingress: {host: shop.example.com}\n", 8, "spec.ingress", WORKER_INGRESS_RULE),
    ("  ingress: {}\n", 8, "spec.ingress", WORKER_INGRESS_RULE),
    ("  readinessProbe:\n    httpGet: {path: /ready}\n", 9, "spec.readinessProbe.httpGet", WORKER_PROBE_RULE),
    ("  livenessProbe:\n    periodSeconds: 5\n    tcpSocket: {}\n", 10, "spec.livenessProbe.tcpSocket",
     WORKER_PROBE_RULE),
])
def test_a_worker_refuses_an_ingress_or_a_probe_of_a_port(extra, line, field, message):
    text = "".join(line + "\n" for line in EXAMPLE.splitlines() if not line.strip().startswith("port")) + extra
    err = only_error(run({"a.yaml": text}))
    assert (err.line, err.field, err.message) == (line, field, message)


def test_missing_or_empty_spec():
    text = EXAMPLE.split("spec:")[0]
    assert [(e.line, e.field, e.message) for e in run({"a.yaml": text}).errors] == [(1, "spec", "is required")]
    errors = run({"a.yaml": text + "spec: []\n"}).errors
    assert [(e.line, e.field, e.message) for e in errors] == [(5, "spec", "must be a mapping, not a list")]
    errors = run({"a.yaml": text + "spec:\n"}).errors
    assert [e.message for e in errors] == ["must be a mapping, not null"]


@pytest.mark.parametrize("key, hint", [
    ("replica", " (did you mean spec.replicas?)"), ("Replicas", " (did you mean spec.replicas?)"),
    ("img", " (did you mean spec.image?)"), ("prt", " (did you mean spec.port?)"),
    ("suspended", " (did you mean spec.suspend?)"), ("containerPort", ""), ("environment", " (did you mean spec.envFrom?)"), ("volume", " (did you mean spec.volumes?)"),
    ("ingres", " (did you mean spec.ingress?)"),
])
def test_unknown_spec_field(key, hint):
    err = only_error(run({"a.yaml": EXAMPLE + f"  {key}: 2\n"}))
    assert (err.line, err.field) == (9, f"spec.{key}")
    assert err.message == f"unknown field{hint} (allowed: {ALLOWED_SPEC})"


def test_tasks_are_refused_at_their_line_with_the_applications_name():
    spec = ("  image: shop:1\n  port: 80\n  tasks:\n    migrate:\n      args: [migrate]\n"
            f"    {'w' * 40}:\n      image: curl:8\n    serve:\n      when: Later\n")
    result = run({"a.yaml": app(name="s" * 20, spec=spec)})
    assert [(e.line, e.field, e.message) for e in result.errors] == [
        (11, f"spec.tasks.{'w' * 40}", f"the Job name '{'s' * 20}-{'w' * 40}-xxxxxxxx' (<application>-<task>-<8 hex "
                                       "digits>) would be 70 characters, over Kubernetes' 63: shorten the task's name "
                                       "by 7"),
        (13, "spec.tasks.serve", "runs the Application's own image with neither command nor args: it would start "
                             "the server, which never finishes; give command or args"),
        (14, "spec.tasks.serve.when", 'must be one of BeforeRollout, AfterRollout (got "Later")')]
    assert [e.field for e in run({"a.yaml": app(name="shop", spec=spec.replace("w" * 40, "warm"))}).errors] == [
        "spec.tasks.serve", "spec.tasks.serve.when"]
    valid = run({"a.yaml": app(name="shop", spec=spec.replace("w" * 40, "warm").replace("when: Later", "args: [x]"))})
    assert valid.errors == [] and len(valid.manifests) == 1
    empty = run({"a.yaml": app(name="shop", spec="  image: shop:1\n  port: 80\n  tasks: {}\n")})
    assert empty.errors == [] and empty.manifests[0].body["spec"]["tasks"] == {}  # runs nothing: nothing skipped


def test_replicas_may_be_left_out():
    text = "".join(line + "\n" for line in EXAMPLE.splitlines() if not line.strip().startswith("replicas"))
    assert run({"a.yaml": text}).errors == []


@pytest.mark.parametrize("key, hint", [("spek", " (did you mean spec?)"), ("metdata", " (did you mean metadata?)"),
                                       ("stats", " (did you mean status?)"), ("foo", "")])
def test_unknown_top_level_field(key, hint):
    err = only_error(run({"a.yaml": EXAMPLE + f"{key}: {{}}\n"}))
    assert (err.line, err.field) == (9, key)
    assert err.message == f"unknown field{hint} (allowed: apiVersion, kind, metadata, spec, status)"


def test_did_you_mean():
    from agent.api.schema import did_you_mean

    assert did_you_mean("replica", ("image", "replicas"), "spec.") == " (did you mean spec.replicas?)"
    assert did_you_mean("zzz", ("image", "replicas")) == "" and did_you_mean(True, ("true",)) == ""


def test_exported_status_is_accepted_and_ignored():
    result = run({"a.yaml": EXAMPLE + "status: {readyReplicas: 1}\n"})
    assert not result.errors and len(result.manifests) == 1


@pytest.mark.parametrize("text", [
    EXAMPLE.replace("kind: Application", "kind: ConfigMap"),
    EXAMPLE.replace("heumsi.github.io/v1", "heumsi.github.io/v2"),
    EXAMPLE.replace("heumsi.github.io/v1", "apps/v1"),
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    "kind: Application\n",
])
def test_wrong_kind(text):
    result = run({"cm.yaml": app("first") + "---\n# other\n" + text})
    assert [m.name for m in result.manifests] == ["first"]
    [err] = result.errors
    assert (err.path, err.line, err.field) == ("cm.yaml", 11, None)
    assert err.message.startswith("only Application (heumsi.github.io/v1) documents are supported")
    assert "as the items of a List (apiVersion v1, kind List)" in err.message  # also accepted: say so


@pytest.mark.parametrize("text, what", [("- a\n- b\n", "a list"), ("hello\n", "a string"),
                                        ("42\n", "an integer"), ("true\n", "a boolean")])
def test_non_mapping_document(text, what):
    err = only_error(run({"x.yaml": "---\n" + text}))
    assert (err.line, err.message) == (2, f"document must be a mapping, not {what}")


def test_alias_bomb_is_rejected_quickly():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    bomb = "\n".join(lines) + "\n---\n" + app("after")
    start = time.process_time()  # this process's CPU time: other processes' load does not count
    result = run({"bomb.yaml": bomb})
    assert time.process_time() - start < 2  # expanded, the 9**9 aliases would take minutes
    assert [m.name for m in result.manifests] == ["after"]
    assert [(e.line, e.message) for e in result.errors] == [(2, "YAML aliases are not supported")]


def test_merge_key_alias_is_rejected():
    text = EXAMPLE.replace("nginx:latest", "&img nginx:latest").replace("spec:\n", "spec:\n  <<: {image: *img}\n")
    assert [(e.line, e.message) for e in run({"a.yaml": text}).errors] == [(6, "YAML aliases are not supported")]


def test_anchor_without_alias_is_harmless():
    assert run({"a.yaml": EXAMPLE.replace("nginx:latest", "&img nginx:latest")}).errors == []


@pytest.mark.parametrize("text, line", [
    ("[" * 10000 + "]" * 10000, 1),
    ("[" * 10000, 1),
    ("[" * 1_000_000, 1),
    ("{a: " * 10000 + "}" * 10000, 1),
    ("- " * 300_000 + "x\n", 1),
    ("? " * 300_000 + "x\n", 1),
    ("".join("  " * i + f"k{i}:\n" for i in range(500)) + "  " * 500 + "v\n", 101),
    (EXAMPLE + "  extra: " + "[" * 150 + "]" * 150 + "\n", 9),
])
def test_deep_nesting_is_rejected_quickly(text, line):
    start = time.process_time()  # this process's CPU time: other processes' load does not count
    err = only_error(run({"deep.yaml": text}, max_file_bytes=10**7))
    assert time.process_time() - start < 2
    assert (err.line, err.message) == (line, "nesting deeper than 100 levels is not supported")


def test_deep_mixed_block_and_flow_nesting_rejects_only_its_document():
    block = "".join("  " * i + f"k{i}:\n" for i in range(60))
    text = block + "  " * 60 + "[" * 60 + "]" * 60 + "\n---\n" + app("ok")
    result = run({"deep.yaml": text})
    assert [m.name for m in result.manifests] == ["ok"]
    assert [(e.line, e.message) for e in result.errors] == [
        (61, "nesting deeper than 100 levels is not supported")]


def test_nesting_at_the_limit_is_allowed():
    text = EXAMPLE.replace("metadata:\n", "metadata:\n  annotations: {a: '" + "x" * 10 + "'}\n")
    text = text + "  replica: " + "[" * 98 + "]" * 98 + "\n"  # depth 100: document, spec, 98 lists
    assert [e.field for e in run({"a.yaml": text}).errors] == ["spec.replica"]


def test_file_over_size_limit():
    err = only_error(run({"big.yaml": EXAMPLE}, max_file_bytes=len(EXAMPLE) - 1))
    assert (err.path, err.line) == ("big.yaml", None)
    assert f"limit of {len(EXAMPLE) - 1} bytes" in err.message
    assert run({"big.yaml": EXAMPLE}, max_file_bytes=len(EXAMPLE)).errors == []


def test_too_many_documents():
    text = "---\n".join(app(f"a{i}") for i in range(4))
    assert "more than 3" in only_error(run({"many.yaml": text}, max_documents=3)).message
    assert len(run({"many.yaml": text}, max_documents=4).manifests) == 4


@pytest.mark.parametrize("namespace, expected", [(None, "prod"), ("team-a", "team-a")])
def test_namespace(namespace, expected):
    [m] = run({"a.yaml": app("web", namespace)}, "prod").manifests
    assert m.namespace == expected and m.body["metadata"]["namespace"] == expected


def test_invalid_default_namespace():
    with pytest.raises(ValueError):
        load({}, "Bad_NS")


@pytest.mark.parametrize("text, fragment", [
    ("!!python/object/apply:os.system ['echo pwned']\n", "could not determine a constructor"),
    (EXAMPLE.replace("replicas: 1", "replicas: !!int abc"), "invalid literal"),
    (EXAMPLE.replace("metadata:\n", "metadata:\n  labels: {on: x}\n"), "not a string"),
    (EXAMPLE.replace("metadata:\n", "metadata:\n  labels: {x: .nan}\n"), "finite"),
    (EXAMPLE.replace("metadata:\n", "metadata:\n  labels: {x: !!binary aGk=}\n"), "bytes"),
    ("a: \x01\n", "special characters"),
])
def test_unsafe_or_non_json_values_are_rejected(text, fragment):
    assert fragment in only_error(run({"x.yaml": text})).message


def test_timestamps_stay_strings():
    text = EXAMPLE.replace("metadata:\n", "metadata:\n  annotations: {released: 2024-01-02}\n")
    [m] = run({"a.yaml": text}).manifests
    assert m.body["metadata"]["annotations"] == {"released": "2024-01-02"}


def test_errors_are_independent_and_sorted():
    files = {
        "z.yaml": app("zed") + "---\n" + app("Bad"),
        "a.yaml": "key: [unclosed\n",
        "m.yaml": app("m2", "b") + "---\n" + app("m1", "b") + "---\n" + app("m0", "a"),
    }
    result = run(files)
    assert [(m.namespace, m.name) for m in result.manifests] == [
        ("a", "m0"), ("b", "m1"), ("b", "m2"), ("default", "zed")]
    assert [(e.path, e.line) for e in result.errors] == [("a.yaml", 2), ("z.yaml", 13)]


@pytest.mark.parametrize("error, text", [
    (ManifestError("apps/web.yaml", 7, "spec.replicas", "must be x"), "apps/web.yaml:7: spec.replicas: must be x"),
    (ManifestError("a.yaml", None, None, "too big"), "a.yaml: too big"),
    (ManifestError("a.yaml", 3, None, "bad"), "a.yaml:3: bad"),
])
def test_error_str(error, text):
    assert str(error) == text


def test_schema_constants():
    assert (API_VERSION, GROUP, VERSION, KIND, PLURAL) == (
        "heumsi.github.io/v1", "heumsi.github.io", "v1", "Application", "applications")
    Draft202012Validator.check_schema(SPEC_SCHEMA)
    assert SPEC_SCHEMA["required"] == ["image"]
    assert STRICT_SPEC_SCHEMA["additionalProperties"] is False


def test_spec_schema_is_a_valid_structural_schema():
    """Only keywords allowed in CRD structural schemas; every node typed (or int-or-string, or
    preserving unknown fields); no additionalProperties next to properties (the API server
    rejects that combination); the logical junctors (not, oneOf, anyOf) hold only required."""
    allowed = {"type", "minLength", "maxLength", "minimum", "maximum", "required", "properties", "description",
               "pattern", "enum", "items", "additionalProperties", "maxItems", "minItems", "maxProperties",
               "minProperties", "not", "oneOf", "anyOf", "x-kubernetes-int-or-string",
               "x-kubernetes-preserve-unknown-fields"}
    stack = [SPEC_SCHEMA]
    while stack:
        node = stack.pop()
        assert set(node) <= allowed
        assert "type" in node or node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields")
        assert not ("properties" in node and "additionalProperties" in node)
        for junctor in ("not", "oneOf", "anyOf"):
            for branch in ([node[junctor]] if junctor == "not" and junctor in node else node.get(junctor, [])
                           if junctor != "not" else []):
                assert set(branch) == {"required"}
        stack.extend(node.get("properties", {}).values())
        stack.extend(n for n in (node.get("items"), node.get("additionalProperties")) if isinstance(n, dict))


NOT_AN_APPLICATION = ("only Application (heumsi.github.io/v1) documents are supported, alone or as the items "
                      "of a List (apiVersion v1, kind List)")
RULE_TEXT = RULE  # the DNS-1123 wording users see after a bad name or namespace


def test_rejected_counts_each_refused_document_once_with_its_first_line_and_application():
    files = {
        "a.yaml": app("a") + "---\n" + app("b", spec="  image: x\n  replicas: 1\n  port: 0\n") + "---\n"
                  + app("Bad") + "---\n" + EXAMPLE.split("spec:")[0],
        "b.yaml": "# x\n" + app("c", spec="  image: x\n  replicas: -1\n  port: 80\n"),
        "c.yaml": app("d") + "---\nkey: [unclosed\n",
        "d.yaml": "x" * 10,
    }
    result = run(files)
    assert [m.name for m in result.manifests] == ["a"]
    assert result.rejected == [
        Rejected("a.yaml", 10, "default/b", ("a.yaml:17: spec.port: must be an integer between 1 and 65535 (got 0)",),
                 True),
        # an Application whose name is what is invalid is still an (invalid) Application
        Rejected("a.yaml", 19, None, (f'a.yaml:22: metadata.name: "Bad" {RULE_TEXT}',), True),
        Rejected("a.yaml", 28, "default/nginx", ("a.yaml:28: spec: is required",), True),
        Rejected("b.yaml", 2, "default/c", ("b.yaml:8: spec.replicas: must be an integer between 0 and 2147483647 (got -1)",),
                 True),
        # a syntax error rejects the whole file, including the valid document before it
        Rejected("c.yaml", None, None, ("c.yaml:11: invalid YAML: expected ',' or ']', but got '<stream end>' "
                                        "(while parsing a flow sequence)",)),
        Rejected("d.yaml", 1, None, ("d.yaml:1: document must be a mapping, not a string",)),
    ]


def test_a_document_of_another_kind_is_not_an_application_and_a_list_item_is_judged_alone():
    config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
    listed = ("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n"
              "- {apiVersion: heumsi.github.io/v1, kind: Application, metadata: {name: Bad}, "
              "spec: {image: x, replicas: 1, port: 80}}\n")
    result = run({"c.yaml": config_map, "l.yaml": listed})
    assert [(r.path, r.line, r.application, r.is_application) for r in result.rejected] == [
        ("c.yaml", 1, None, False), ("l.yaml", 4, None, False), ("l.yaml", 5, None, True)]


def flow_app(name, port):
    return ("--- {apiVersion: heumsi.github.io/v1, kind: Application, metadata: {name: %s}, "
            "spec: {image: x, replicas: 1, port: %s}}\n" % (name, port))


def test_rejected_documents_that_each_take_one_line():
    result = run({"f.yaml": flow_app("a", 0) + flow_app("b", 0) + flow_app("c", 80)})
    assert [m.name for m in result.manifests] == ["c"]
    message = "spec.port: must be an integer between 1 and 65535 (got 0)"
    assert result.rejected == [Rejected("f.yaml", 1, "default/a", (f"f.yaml:1: {message}",), True),
                               Rejected("f.yaml", 2, "default/b", (f"f.yaml:2: {message}",), True)]


def test_all_reasons_of_one_document_are_in_its_one_rejected_entry():
    text = "# c\n" + app("web", spec="  image: ''\n  replicas: -1\n  port: 0\n")
    [rejected] = run({"w.yaml": text}).rejected
    assert rejected == Rejected("w.yaml", 2, "default/web", (
        'w.yaml:7: spec.image: must be a non-empty string (got "")',
        "w.yaml:8: spec.replicas: must be an integer between 0 and 2147483647 (got -1)",
        "w.yaml:9: spec.port: must be an integer between 1 and 65535 (got 0)"), True)


def test_errors_on_one_line_are_ordered_by_field():
    text = ("apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: a}\n"
            "spec: {image: x, replicas: -1, port: 0}\n")
    assert [(e.line, e.field) for e in run({"a.yaml": text}).errors] == [(4, "spec.port"), (4, "spec.replicas")]


def test_duplicate_identity_message_names_every_location():
    result = run({"a.yaml": EXAMPLE, "b/c.yml": "# x\n" + EXAMPLE})
    assert [str(e) for e in result.errors] == [
        "a.yaml:4: metadata.name: Application default/nginx is defined more than once: a.yaml:4, b/c.yml:5",
        "b/c.yml:5: metadata.name: Application default/nginx is defined more than once: a.yaml:4, b/c.yml:5"]


LIST_OF_TWO = ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: heumsi.github.io/v1\n  kind: Application\n"
               "  metadata:\n    name: nginx\n  spec: {image: x, replicas: 1, port: 80}\n"
               "- kind: Application\n  apiVersion: heumsi.github.io/v1\n  spec: {image: x, replicas: 1, port: 80}\n"
               "  metadata: {namespace: default, name: nginx}\n")


@pytest.mark.parametrize("files, expected", [
    # within one file: the metadata.name of each document, not its first line
    ({"a.yaml": "---\n# one\n\n" + EXAMPLE + "---\nspec: {image: x, replicas: 1, port: 80}\nkind: Application\n"
                "apiVersion: heumsi.github.io/v1\nmetadata:\n  labels: {a: b}\n  name: nginx\n"},
     [("a.yaml", 7), ("a.yaml", 18)]),
    # within one List: each item's own metadata.name, also in flow style
    ({"l.yaml": LIST_OF_TWO}, [("l.yaml", 7), ("l.yaml", 12)]),
    # across files, one of them a List item
    ({"l.yaml": LIST_OF_TWO.replace("name: nginx}", "name: other}"), "z.yaml": EXAMPLE}, [("l.yaml", 7), ("z.yaml", 4)]),
    # a document refused for another reason keeps its identity, named from its nodes
    ({"a.yaml": EXAMPLE, "b.yaml": "# x\n" + EXAMPLE.replace("latest", "latest\n  image: y")},
     [("a.yaml", 4), ("b.yaml", 5)]),
    ({"a.yaml": EXAMPLE, "b.yaml": "\n" + EXAMPLE.replace("replicas: 1", "replicas: !!python/name:os.system ''")},
     [("a.yaml", 4), ("b.yaml", 5)]),
])
def test_a_duplicate_identity_is_reported_at_each_metadata_name(files, expected, monkeypatch):
    from agent.manifests import loader as manifests

    result = run(files)
    twice = [e for e in result.errors if "more than once" in e.message]
    assert [(e.path, e.line, e.field) for e in twice] == [(p, n, "metadata.name") for p, n in expected]
    where = ", ".join(f"{p}:{n}" for p, n in expected)
    assert all(e.message.endswith(f"is defined more than once: {where}") for e in twice)
    for path, line in expected:  # the cited line is where the name is written
        assert "name:" in files[path].splitlines()[line - 1]
    monkeypatch.setattr(manifests, "_FAST", False)
    assert run(files) == result


def test_a_cached_file_names_the_same_metadata_name_lines(tmp_path):
    from agent.manifests import parsecache

    two = LIST_OF_TWO.replace("name: nginx\n", "name: web\n").replace("name: nginx}", "name: b}")
    files = {"a.yaml": ("# x\n" + EXAMPLE).encode(), "l.yaml": two.encode()}
    blobs = {"a.yaml": "1" * 40, "l.yaml": "2" * 40}
    cache = parsecache.ParseCache(tmp_path / "c.json", "v")
    assert load(files, "default", blobs=blobs, cache=cache).errors == []
    cache.save()
    again = parsecache.ParseCache(tmp_path / "c.json", "v")
    other = {"b.yaml": EXAMPLE.encode(), "c.yaml": two.encode()}  # parsed: each a duplicate of a cached one
    result = load({**files, **other}, "default", blobs=blobs, cache=again)
    assert [(e.path, e.line) for e in result.errors] == [("a.yaml", 5), ("b.yaml", 4), ("c.yaml", 7), ("c.yaml", 12),
                                                         ("l.yaml", 7), ("l.yaml", 12)]
    assert result == load({**files, **other}, "default")  # the same without the cache


def test_default_limits_are_one_mebibyte_and_a_thousand_documents():
    big = EXAMPLE + "#" * (1_048_577 - len(EXAMPLE) - 1) + "\n"
    assert len(big) == 1_048_577
    assert run({"big.yaml": big}).errors == [
        ManifestError("big.yaml", None, None, "file is 1048577 bytes, above the limit of 1048576 bytes")]
    assert run({"many.yaml": "---\n" * 1001}).errors == [
        ManifestError("many.yaml", None, None, "more than 1000 YAML documents (each item of a List counts as one)")]
    assert run({"many.yaml": "---\n" * 1000}).errors == []


def test_invalid_default_namespace_message():
    with pytest.raises(ValueError) as raised:
        load({}, "Bad_NS")
    assert str(raised.value) == f"default namespace 'Bad_NS' {RULE_TEXT}"


@pytest.mark.parametrize("data, line, message", [
    (b"\n\nx: \xff\n\n", 3, "not valid UTF-8 (byte 0xff at offset 5)"),
    (b"x: \xfe\n", 1, "not valid UTF-8 (byte 0xfe at offset 3)"),
    ("\n\na: \x01\n\n\n".encode(), 3, "invalid YAML: character #x0001: special characters are not allowed"),
    ("a: \x01\n".encode(), 1, "invalid YAML: character #x0001: special characters are not allowed"),
    (b"a: b: c\n", 1, "invalid YAML: mapping values are not allowed here"),
    (b"\na: [\n", 3, "invalid YAML: expected the node content, but found '<stream end>' (while parsing a flow node)"),
])
def test_file_level_errors_name_their_line_exactly(data, line, message):
    assert run({"bad.yaml": data}).errors == [ManifestError("bad.yaml", line, None, message)]


@pytest.mark.parametrize("text, expected", [
    (EXAMPLE.replace("image: nginx:latest", "image: !!python/name:os.system ''"),
     (6, None, "invalid YAML value: could not determine a constructor for the tag "
               "'tag:yaml.org,2002:python/name:os.system'")),
    (EXAMPLE.replace("heumsi.github.io/v1", "!!binary aGk="),
     (1, None, f"{NOT_AN_APPLICATION} "
               "(found apiVersion b'hi', kind \"Application\")")),
    ("apiVersion: apps/v1\nkind: Deployment\n",
     (1, None, f'{NOT_AN_APPLICATION} '
               '(found apiVersion "apps/v1", kind "Deployment")')),
    ("kind: Application\n",
     (1, None, f"{NOT_AN_APPLICATION} (found apiVersion null, "
               'kind "Application")')),
    (EXAMPLE.replace("metadata:\n  name: nginx\n", "metadata:\n  name: nginx\n  annotations:\n    x: .inf\n"),
     (6, "metadata.annotations.x", "must be a finite number (JSON has no .inf or .nan)")),
    (EXAMPLE + "Xtra: .nan\n", (9, "Xtra", "must be a finite number (JSON has no .inf or .nan)")),
    (EXAMPLE.replace("metadata:\n  name: nginx\n", 'metadata:\n  name: nginx\n  annotations:\n    x: "a\\ud800"\n'),
     (6, "metadata.annotations.x", SURROGATE)),
    (EXAMPLE.replace("image: nginx:latest", 'image: "nginx\\udfff"'), (6, "spec.image", SURROGATE)),
    (EXAMPLE.replace("metadata:\n", 'metadata:\n  labels:\n    "\\ud800": x\n'),
     (4, "metadata.labels", f"key {chr(0xd800)!r} {SURROGATE}")),
    (EXAMPLE + "1: x\n", (9, "1", 'key 1 is an integer, not a string (kubectl would make it "1"); quote it: "1"')),
    (EXAMPLE.replace("metadata:\n", "metadata:\n  labels:\n    on: x\n"),
     (5, "metadata.labels.on", "key on is a boolean, not a string (YAML 1.1 reads unquoted yes/no, on/off and, for "
                               'kubectl, y/n as booleans; kubectl would make it "true"); quote it: "on"')),
    (app("café"), (4, "metadata.name", f'"café" {RULE_TEXT}')),
    ("3.5\n", (1, None, "document must be a mapping, not a number")),
    ("# c\n\nkind: Application\napiVersion: heumsi.github.io/v1\nspec: {image: x, replicas: 1, port: 80}\n",
     (3, "metadata", "is required")),
    ("apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: [a]\nspec: {image: x, replicas: 1, port: 80}\n",
     (3, "metadata", "must be a mapping")),
    (EXAMPLE + "spek: 1\n", (9, "spek", "unknown field (did you mean spec?) (allowed: apiVersion, kind, metadata, spec, status)")),
])
def test_document_errors_exactly(text, expected):
    [err] = run({"a.yaml": text}).errors
    assert (err.line, err.field, err.message) == expected


def test_a_document_that_is_only_an_alias_is_refused_alone():
    result = run({"a.yaml": "--- *a\n---\n" + app("ok")})
    assert [m.name for m in result.manifests] == ["ok"]
    assert result.rejected == [Rejected("a.yaml", 1, None, ("a.yaml:1: YAML aliases are not supported",))]


def _block(levels):
    """``levels`` nested block mappings, the deepest holding two keys."""
    return ("".join("  " * i + f"k{i}:\n" for i in range(levels - 1))
            + "  " * (levels - 1) + "a: 1\n" + "  " * (levels - 1) + "b: 2\n")


@pytest.mark.parametrize("levels, expected", [
    (100, (1, f"{NOT_AN_APPLICATION} (found apiVersion null, kind null)")),
    (101, (101, "nesting deeper than 100 levels is not supported")),
])
def test_block_nesting_limit_is_100_levels(levels, expected):
    [err] = run({"a.yaml": _block(levels)}).errors
    assert (err.line, err.message) == expected


@pytest.mark.parametrize("levels, names, expected", [
    (100, ["ok"], (10, "document must be a mapping, not a list")),  # at the limit: only its document is wrong
    (101, [], (10, "nesting deeper than 100 levels is not supported")),  # the scanner stops the whole file
])
def test_flow_nesting_limit_is_100_levels(levels, names, expected):
    result = run({"a.yaml": app("ok") + "---\n" + "[" * levels + "]" * levels + "\n"})
    assert [m.name for m in result.manifests] == names
    assert [(e.line, e.message) for e in result.errors] == [expected]


def _mixed(lists, sibling):
    """61 nested block mappings whose deepest key ``z`` holds ``lists`` nested flow lists; with
    ``sibling``, a key before ``z`` holds an empty list (closed before ``z`` is read)."""
    text = "".join("  " * i + f"k{i}:\n" for i in range(60))
    if sibling:
        text += "  " * 60 + "a: []\n"
    return text + "  " * 60 + "z: " + "[" * lists + "]" * lists + "\n"


@pytest.mark.parametrize("lists, sibling, expected", [
    (39, False, (1, f"{NOT_AN_APPLICATION} (found apiVersion null, "
                    "kind null)")),
    (39, True, (1, f"{NOT_AN_APPLICATION} (found apiVersion null, "
                   "kind null)")),
    (40, False, (61, "nesting deeper than 100 levels is not supported")),
    (40, True, (62, "nesting deeper than 100 levels is not supported")),  # a closed sibling does not reset depth
])
def test_mixed_block_and_flow_nesting_counts_every_open_level(lists, sibling, expected):
    result = run({"a.yaml": _mixed(lists, sibling) + "---\n" + app("ok")})
    assert [m.name for m in result.manifests] == ["ok"]
    assert [(e.line, e.message) for e in result.errors] == [expected]


def test_many_refused_documents_are_attributed_in_linear_time():
    """Rejected entries come from the errors each document recorded, not from searching every
    document for each error's line (quadratic: 16 files of 1000 invalid items took 45 s)."""
    from agent.manifests.loader import _rejected

    errors = [ManifestError("f.yaml", i + 1, "spec.replicas", "bad") for i in range(20000)]
    rows = [("f.yaml", i + 1, i + 1, f"default/a{i}", True, [e], None) for i, e in enumerate(errors)]
    started = time.process_time()  # this process's CPU time: other processes' load does not count
    rejected = _rejected(errors, rows)
    assert time.process_time() - started < 3
    assert len(rejected) == 20000 and rejected[1] == Rejected("f.yaml", 2, "default/a1", ("f.yaml:2: spec.replicas: bad",), True)


@pytest.mark.parametrize("text, application", [
    # a duplicate key: nothing is constructed, kind and name are read from the nodes
    ("apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: web}\nspec:\n  port: 1\n  port: 2\n",
     "default/web"),
    ("apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: web, namespace: prod}\nspec: {port: 1, port: 2}\n",
     "prod/web"),
    # a non-JSON value is caught before the identity is recorded
    ("apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: web}\nspec: {image: !!binary aGk=, "
     "replicas: 1, port: 80}\n", "default/web"),
    # no valid plain name: still an invalid Application, by file:line
    ("apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: Web}\nspec: {port: 1, port: 2}\n", None),
    ("apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: 123}\nspec: {port: 1, port: 2}\n", None),
    ("apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: a, name: b}\nspec: {}\n", None),
])
def test_an_application_that_cannot_be_constructed_is_still_an_application(text, application, monkeypatch):
    from agent.manifests import loader as manifests

    result = run({"a.yaml": text})
    monkeypatch.setattr(manifests, "_FAST", False)
    assert run({"a.yaml": text}) == result
    [rejected] = result.rejected
    assert (rejected.line, rejected.application, rejected.is_application) == (1, application, True)


def test_a_document_of_another_kind_that_cannot_be_constructed_is_no_application():
    [rejected] = run({"c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: 1, a: 2}\n"}).rejected
    assert (rejected.application, rejected.is_application) == (None, False)


def test_an_unconstructed_application_shares_its_identity_with_a_valid_one():
    broken = "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: nginx}\nspec: {port: 1, port: 2}\n"
    result = run({"a.yaml": broken, "b.yaml": EXAMPLE})
    assert result.manifests == []  # the same Application twice: neither is applied
    assert [(r.path, r.application) for r in result.rejected] == [("a.yaml", "default/nginx"), ("b.yaml", "default/nginx")]


@pytest.mark.parametrize("text, path, line, value", [
    ("a: 1\nmetadata:\n  x: 1\n  name: web\n", ("metadata", "name"), 4, "web"),
    ("metadata: {name: web}\n", ("metadata", "name"), 1, "web"),
    ("metadata: {name: 5}\n", ("metadata", "name"), 1, None),  # no string
    ("metadata:\n  x: 1\n", ("metadata", "name"), None, "absent"),  # missing
    ("metadata:\n  name: a\n  name: b\n", ("metadata", "name"), None, None),  # repeated
    ("metadata: [name]\n", ("metadata", "name"), None, None),  # no mapping
    ("- a\n", ("metadata",), None, None),
])
def test_key_line_and_scalar_read_a_key_from_the_nodes(text, path, line, value):
    import yaml

    from agent.manifests.nodes import key_line, scalar

    node = yaml.compose(text, Loader=yaml.SafeLoader)
    assert (key_line(node, path), scalar(node, path, "absent")) == (line, value)


@pytest.mark.parametrize("fast", [True, False], ids=["libyaml", "pure-python"])
def test_a_plain_equals_sign_is_the_string_kubectl_reads(fast, monkeypatch):
    """PyYAML resolves a plain ``=`` to its "value" tag, which no constructor knows; go-yaml
    (kubectl) reads the string "="."""
    from agent.manifests import loader as manifests

    monkeypatch.setattr(manifests, "_FAST", fast)
    text = EXAMPLE.replace("metadata:\n  name: nginx\n", "metadata:\n  name: nginx\n  annotations:\n    note: =\n")
    result = run({"a.yaml": text})
    assert result.errors == [] and result.manifests[0].body["metadata"]["annotations"] == {"note": "="}


@pytest.mark.parametrize("fast", [True, False], ids=["libyaml", "pure-python"])
def test_an_integer_too_long_for_python_is_a_string_the_schema_names_in_one_short_line(fast, monkeypatch):
    """More digits than Python converts (4300): go-yaml reads such a number as a string, so it is
    the field's own error at its own line, with the value cut short."""
    from agent.manifests import loader as manifests

    monkeypatch.setattr(manifests, "_FAST", fast)
    err = only_error(run({"big.yaml": app(spec="  image: nginx:1\n  replicas: " + "9" * 5000 + "\n  port: 80\n")}))
    assert (err.line, err.field) == (7, "spec.replicas")
    assert err.message.startswith("must be an integer between 0 and 2147483647 (got \"999")
    assert err.message.endswith('... (5002 characters))') and len(err.message) < 200


@pytest.mark.parametrize("value, shown", [
    ("x" * 78, '"' + "x" * 78 + '"'),  # 80 characters with the quotes: whole
    ("x" * 79, '"' + "x" * 79 + '... (81 characters)'),
    (12, "12"), (None, "null"), ({1, 2} and b"b", "b'b'"),
])
def test_a_value_in_a_message_is_cut_after_80_characters(value, shown):
    from agent.manifests.nodes import show

    assert show(value) == shown


@pytest.mark.parametrize("security, line_field, message", [
    ("{profile: restricted, runAsUser: 0}", (9, "spec.security.runAsUser"), "must not be 0 with profile restricted"),
    ("{addCapabilities: [SYS_ADMIN]}", (9, "spec.security.addCapabilities[0]"), "must be NET_BIND_SERVICE"),
])
def test_security_refusals_name_file_line_and_field(security, line_field, message):
    err = only_error(run({"a.yaml": EXAMPLE + f"  security: {security}\n"}))
    assert (err.path, err.line, err.field) == ("a.yaml", *line_field)
    assert err.message.startswith(message)
