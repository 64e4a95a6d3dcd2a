"""`python -m agent validate` as a user (or a pre-commit hook) types it: no cluster, no kubeconfig."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from tests.support import GitRepo, app_yaml, unprivileged

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "agent" / "report.schema.json").read_text())

SPEC_FIELDS = ("args, autoscaling, command, disruptionBudget, env, envFrom, files, image, imagePullSecrets, ingress, "
               "livenessProbe, placement, podAnnotations, podLabels, port, ports, readinessProbe, replicas, resources, "
               "rollout, schedules, security, serviceAccountName, startupProbe, suspend, tasks, "
               "terminationGracePeriodSeconds, volumes")
"""The fields of an Application's spec, as an unknown field's problem lists them."""


@pytest.fixture
def validate(tmp_path):
    """Runs ``python -m agent validate ARGS`` with HOME pointed at an empty directory and no
    kubeconfig or agent variable anywhere in the environment."""
    home = tmp_path / "empty-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITOPS_AGENT_", "KUBE")) and k not in ("HOME", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)

    def run(*args, cwd=ROOT):
        proc = subprocess.run([sys.executable, "-m", "agent", "validate", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=120)
        print(f"$ validate {' '.join(args)}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}")
        assert "Traceback" not in proc.stderr
        return proc

    run.home = home
    return run


def test_the_sample_repo_is_valid_without_any_cluster_configuration(validate):
    proc = validate("--path", "sample-repo")
    assert proc.returncode == 0 and proc.stdout.startswith("valid: 5 files, 6 Applications")
    assert list(validate.home.iterdir()) == []  # nothing read or written in HOME


BROKEN = {
    "syntax.yaml": "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: [\n",
    "schema.yaml": app_yaml("schema").replace("replicas: 1", "replicas: -1").replace("port: 80", "port: 80\n  extra: 1"),
    "names.yaml": app_yaml("Bad_Name"),
    "labels.yaml": app_yaml("labels").replace("metadata:\n", "metadata:\n  labels:\n    tier: 5\n"),
    "a/dup.yaml": app_yaml("dup"),
    "b/dup.yaml": app_yaml("dup"),
    "good.yaml": app_yaml("good"),
}


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_every_class_of_error_with_file_and_line_in_one_run(validate, tmp_path):
    write(tmp_path / "apps", BROKEN)
    proc = validate("--path", "apps", cwd=tmp_path)
    assert proc.returncode == 2
    errors = proc.stderr.splitlines()
    assert len(errors) == 7 and all(line.startswith("error: apps/") for line in errors), errors
    for expected in ("apps/syntax.yaml:4: invalid YAML", "apps/schema.yaml:7: spec.replicas:",
                     "apps/schema.yaml:9: spec.extra: unknown field", "apps/names.yaml:4: metadata.name:",
                     "apps/labels.yaml:5: metadata.labels.tier: must be a string",
                     "apps/a/dup.yaml:4: metadata.name: Application default/dup is defined more than once: "
                     "apps/a/dup.yaml:4, apps/b/dup.yaml:4",
                     "apps/b/dup.yaml:4: metadata.name"):
        assert expected in proc.stderr, expected
    assert proc.stdout == "invalid: 7 problems in 6 of 7 files\n"  # the report: the problems are on stderr


def test_json_and_markdown_reports(validate, tmp_path):
    write(tmp_path, BROKEN)
    proc = validate("--path", str(tmp_path), "-o", "json")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert {(Path(e["file"]).name, e["line"], e["field"]) for e in doc["errors"]} >= {
        ("schema.yaml", 7, "spec.replicas"), ("labels.yaml", 5, "metadata.labels.tier")}
    assert doc["exitCode"] == 2 and doc["applications"][0]["name"] == "default/good"
    assert len(proc.stderr.splitlines()) == 7  # every problem on stderr too
    md = validate("--path", str(tmp_path), "--output", "markdown").stdout
    assert md.startswith("### gitops-agent validate: 7 problems in 6 of 7 files") and "| `default/good` |" in md


@pytest.mark.parametrize("output", ["text", "json", "markdown"])
@pytest.mark.parametrize("path, error", [
    ("/nonexistent", "error: --path '/nonexistent' does not exist"),
    ("/etc/hostname", "error: --path '/etc/hostname' is not a directory"),
])
def test_an_unreadable_source_is_one_error_on_stderr_in_every_format(validate, tmp_path, path, error, output):
    proc = validate("--path", path, "-o", output, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr == error + "\n"
    if output == "text":
        assert proc.stdout == "not validated: the files could not be read\n"
    elif output == "json":
        doc = json.loads(proc.stdout)
        assert doc["ok"] is False and doc["errors"][0]["message"] == error.removeprefix("error: ")
    else:
        assert proc.stdout.startswith("### gitops-agent validate: the files could not be read")



def test_symlink_loops_fifos_and_directory_symlinks_are_file_errors_as_in_a_commit(validate, tmp_path):
    apps = tmp_path / "apps"
    (apps / "real").mkdir(parents=True)
    (apps / "good.yaml").write_text(app_yaml("good"))
    (apps / "a.yaml").symlink_to("b.yaml")
    (apps / "b.yaml").symlink_to("a.yaml")
    (apps / "apps.yaml").symlink_to("real")
    (apps / "outside.yml").symlink_to("/etc")
    os.mkfifo(apps / "p.yaml")  # opened, it would block validate forever
    proc = validate("--path", "apps", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "error: apps/a.yaml: symlink to 'b.yaml' is not a regular file; only file symlinks are followed",
        "error: apps/apps.yaml: symlink to 'real' is not a regular file; only file symlinks are followed",
        "error: apps/b.yaml: symlink to 'a.yaml' is not a regular file; only file symlinks are followed",
        "error: apps/outside.yml: symlink to absolute path '/etc' is refused (it leaves the directory)",
        "error: apps/p.yaml: is not a regular file (a FIFO); only regular files and file symlinks are read",
    ]
    assert proc.stdout == "invalid: 5 problems in 5 of 6 files\n"


def test_a_commit_of_a_repository_and_its_ref(validate, tmp_path):
    repo = GitRepo.create(tmp_path / "repo")
    repo.write("apps/web.yaml", app_yaml("web"))
    good = repo.commit()
    repo.write("apps/web.yaml", app_yaml("web", replicas=-3))
    repo.commit("break it")
    cache = str(tmp_path / "cache")
    proc = validate("--repo", str(repo.path), "--path", "apps", "--ref", good, "--cache-dir", cache, "-o", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["commit"] == good
    assert isinstance(doc["timings"]["fetchSeconds"], float) and doc["timings"]["fetchSeconds"] >= 0  # the first clone
    proc = validate("--repo", str(repo.path), "--path", "apps", "--cache-dir", cache)
    assert proc.returncode == 2 and "error: apps/web.yaml:7: spec.replicas" in proc.stderr
    # the work tree holds the same broken file: validated as a plain directory it fails too
    assert validate("--path", str(repo.path / "apps")).returncode == 2


@pytest.mark.parametrize("args,says", [
    (["-o", "xml"], "argument -o/--output: 'xml' is not allowed: must be one of text, json, markdown"),
    (["--ref", "main"], "argument --ref: 'main' is not allowed without --repo"),
    (["--namespace", "Bad_NS"], "argument --namespace: 'Bad_NS' is not allowed: must be a DNS-1123 label"),
    (["--log-level", "verbose"], "argument --log-level: 'verbose' is not allowed: must be one of DEBUG"),
    (["--repo", "x", "--git-token-file", "/nonexistent/t"], "argument --git-token-file: '/nonexistent/t' is not allowed"),
    (["--path", "does-not-exist"], "--path 'does-not-exist' does not exist"),
    (["--fetch-timeout", "soon"], "argument --fetch-timeout: 'soon' is not allowed: must be a number of seconds > 0 and <= 3600"),
    (["--fetch-timeout", "nan"], "must be a number of seconds > 0 and <= 3600"),
    (["--path", ""], "argument --path: '' is not allowed: must be a non-empty string"),
    (["--path", " "], "argument --path: ' ' is not allowed: must be a non-empty string"),
    (["--repo", ""], "argument --repo: '' is not allowed: must be a non-empty string"),
    (["--repo", "x", "--cache-dir", "/etc/passwd"],
     "argument --cache-dir: '/etc/passwd' is not allowed: must be a directory this user can read and write, or a "
     "path where one can be created (it is not a directory)"),
    (["--repo", "x", "--cache-dir", "/etc/passwd/c"], "argument --cache-dir: '/etc/passwd/c' is not allowed"),
])
def test_user_errors_are_one_line_and_exit_2(validate, tmp_path, args, says):
    proc = validate(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert says in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert says not in proc.stdout  # the report (if any) on stdout; the error on stderr


def test_credentials_never_appear(validate, tmp_path):
    proc = validate("--repo", "https://alice:s3cr3t-token@127.0.0.1:9/apps.git", "--cache-dir",
                    str(tmp_path / "c"), "--fetch-timeout", "5", "-o", "json")
    assert proc.returncode == 2
    assert "s3cr3t-token" not in proc.stdout + proc.stderr and "alice" not in proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["source"]["repo"] == "https://***@127.0.0.1:9/apps.git" and "fetching" in doc["errors"][0]["message"]


def test_help_documents_exit_codes(validate):
    proc = validate("--help")
    assert proc.returncode == 0 and "exit codes:" in proc.stdout and "  2  invalid" in proc.stdout


def test_a_thousand_files_validate_fast(validate, tmp_path):
    for i in range(1000):
        (tmp_path / f"app-{i:04d}.yaml").write_text(app_yaml(f"app-{i:04d}", replicas=i % 5))
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = validate("--path", str(tmp_path), "-o", "json")
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the validate process, reaped by now
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"validate: {elapsed:.1f}s, {cpu:.1f}s of CPU")
    assert proc.returncode == 0 and json.loads(proc.stdout)["counts"]["applications"] == 1000
    # about 1.5 s on a 2-core machine (README); CPU time is the run's own: load does not stretch it
    assert cpu < 20, f"{cpu:.1f}s of CPU"


def test_a_bad_output_format_in_the_environment_is_one_line_exit_2(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GITOPS_AGENT_")},
           "GITOPS_AGENT_OUTPUT": "xml", "HOME": str(tmp_path)}
    for command in ("validate", "diff", "sync"):
        proc = subprocess.run([sys.executable, "-m", "agent", command, "--repo", "x"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and proc.stdout == "" and proc.stderr == (
            f"python -m agent {command}: error: argument -o/--output: GITOPS_AGENT_OUTPUT='xml' is not allowed: "
            f"must be one of text, json, markdown (see python -m agent {command} --help)\n"), command


def test_processes_sharing_one_cache_fetch_one_at_a_time(tmp_path):
    """Several runs at once on one --cache-dir (CI jobs on one runner): each waits for the
    mirror's lock instead of failing on Git's ref locks or on the first fetch's rename."""
    repo = GitRepo.create(tmp_path / "repo")
    repo.write("web.yaml", app_yaml("web"))
    repo.commit("web")
    cache = tmp_path / "cache"
    for round_ in range(3):  # the first round races the first fetch, the others a fetch of a new commit
        procs = [subprocess.Popen([sys.executable, "-m", "agent", "validate", "--repo", str(repo.path),
                                   "--cache-dir", str(cache), "-q"], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for _ in range(4)]
        outputs = [p.communicate(timeout=120)[0] for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, outputs
        repo.write("web.yaml", app_yaml("web", replicas=round_ + 2))
        repo.commit(f"round {round_}")
    assert len([p for p in cache.iterdir() if p.name.endswith(".git")]) == 1
    assert not [p for p in cache.iterdir() if p.name.startswith(".new-")]  # no staging left behind


def test_full_ref_names_name_exactly_that_branch_or_tag(validate, tmp_path):
    """``refs/heads/NAME`` and ``refs/tags/NAME`` (as Git, Flux's spec.ref.name and push
    webhooks write them) resolve to that branch or tag, also where a branch and a tag share a
    name; the no-change check of ``run`` (git ls-remote) reads them the same way."""
    from agent.source import mirror as source

    repo = GitRepo.create(tmp_path / "repo")
    repo.write("web.yaml", app_yaml("web"))
    tagged = repo.commit("one")
    repo.git("tag", "v1")
    repo.git("branch", "v1-branch")
    repo.write("web.yaml", app_yaml("web", replicas=2))
    head = repo.commit("two")
    repo.git("branch", "v1")  # a branch named like the tag, at the newer commit
    cache = tmp_path / "cache"
    for ref, commit in (("refs/heads/main", head), ("refs/tags/v1", tagged), ("refs/heads/v1", head),
                        ("v1", head), ("main", head)):
        proc = validate("--repo", str(repo.path), "--ref", ref, "--cache-dir", str(cache), "-o", "json")
        assert proc.returncode == 0 and json.loads(proc.stdout)["commit"] == commit, ref
        assert source.fetch(str(repo.path), ref, cache, known_commit=commit).fetched is False, ref
    proc = validate("--repo", str(repo.path), "--ref", "refs/heads/nope", "--cache-dir", str(cache))
    assert proc.returncode == 2 and "ref 'refs/heads/nope' is not a branch, tag or commit" in proc.stderr


def test_a_kind_list_file_is_validated_item_by_item(validate, tmp_path):
    """``kind: List`` as ``kubectl apply -f`` takes it: each item is a document of the file; an
    item's error names the file and the item's own line."""
    items = "".join("- " + app_yaml(name, replicas=replicas).replace("\n", "\n  ").rstrip(" ")
                    for name, replicas in (("web", 1), ("api", -1)))
    (tmp_path / "list.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n" + items +
                                        "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n")
    proc = validate("--path", ".", "-o", "json", cwd=tmp_path)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 2 and [a["name"] for a in doc["applications"]] == ["default/web"]
    assert [(a["file"], a["line"]) for a in doc["applications"]] == [("list.yaml", 4)]
    assert proc.stderr.splitlines() == [
        "error: list.yaml:18: spec.replicas: must be an integer between 0 and 2147483647 (got -1)",
        'error: list.yaml:20: only Application (heumsi.github.io/v1) documents are supported, alone or as the items '
        'of a List (apiVersion v1, kind List) (found apiVersion "v1", '
        'kind "ConfigMap")']


def test_a_duplicate_key_refuses_only_its_list_item_and_every_problem_of_it_is_listed(validate, tmp_path):
    """A duplicate key in one item refused the whole List and hid the item's other problems."""
    bad = app_yaml("api", replicas=-1).replace("  port: 80\n", "  port: 80\n  port: 81\n  foo: 1\n")
    (tmp_path / "list.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n" + "".join(
        "- " + d.replace("\n", "\n  ").rstrip(" ") for d in (app_yaml("web"), bad, app_yaml("db"))))
    proc = validate("--path", ".", "-o", "json", cwd=tmp_path)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 2
    assert [(a["name"], a["line"]) for a in doc["applications"]] == [("default/db", 22), ("default/web", 4)]
    assert proc.stderr.splitlines() == [
        "error: list.yaml:18: spec.replicas: must be an integer between 0 and 2147483647 (got -1)",
        "error: list.yaml:20: spec.port: duplicate key 'port' (first defined on line 19)",
        f"error: list.yaml:21: spec.foo: unknown field (allowed: {SPEC_FIELDS})"]


def test_file_names_with_control_characters_are_escaped_where_a_human_reads_them(validate, tmp_path):
    """A newline, ESC or another non-printable character in a file name is escaped on stderr and
    in markdown (it used to break the line or drive the terminal); json keeps the real name."""
    names = {"a\nb.yaml": "a\\nb.yaml", "\x1b[31mred.yaml": "\\x1b[31mred.yaml", "rtl\u202e.yaml": "rtl\\u202e.yaml"}
    for i, name in enumerate(names):
        (tmp_path / name).write_text(app_yaml(f"web{i}").replace("port: 80", "port: 0"))
    proc = validate("--path", ".", cwd=tmp_path)
    assert proc.returncode == 2 and all(line.isprintable() for line in proc.stderr.splitlines())
    assert sorted(proc.stderr.splitlines()) == sorted(
        f"error: {shown}:8: spec.port: must be an integer between 1 and 65535 (got 0)" for shown in names.values())
    markdown = validate("--path", ".", "-o", "markdown", cwd=tmp_path).stdout
    assert all(line.isprintable() for line in markdown.splitlines())
    assert all(f"- `{shown}:8: spec.port`: must be an integer" in markdown for shown in names.values())
    doc = json.loads(validate("--path", ".", "-o", "json", cwd=tmp_path).stdout)
    assert {e["file"] for e in doc["errors"]} == set(names)


def test_markdown_of_file_names_with_backticks_pipes_and_backslashes(validate, tmp_path):
    """A backtick in a file name ended its code span early, ``|`` was escaped (and shown as ``\\|``)
    outside the table, and backslashes in text were not escaped."""
    (tmp_path / "a`b|c.yaml").write_text(app_yaml("web"))
    (tmp_path / "x\\y.yaml").write_text(app_yaml("api", port=0))
    proc = validate("--path", ".", "-o", "markdown", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == (
        "### gitops-agent validate: 1 problem in 1 of 2 files\n"
        "\n"
        "| Application | File |\n"
        "|---|---|\n"
        "| `default/web` | ``a`b\\|c.yaml:1`` |\n"
        "\n"
        "**Errors**\n"
        "\n"
        "- `x\\y.yaml:8: spec.port`: must be an integer between 1 and 65535 (got 0)\n\n")  # print's newline too


def test_names_namespaces_and_label_values_that_are_not_strings_say_so(validate, tmp_path):
    (tmp_path / "web.yaml").write_text(
        "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata:\n  name: 123\n  namespace: 7\n"
        "  labels:\n    tier: 5\n    canary: true\nspec: {image: x, replicas: 1, port: 80}\n")
    proc = validate("--path", ".", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        'error: web.yaml:4: metadata.name: must be a string, not an integer (quote it: "123")',
        'error: web.yaml:5: metadata.namespace: must be a string, not an integer (quote it: "7")',
        'error: web.yaml:7: metadata.labels.tier: must be a string, not an integer (quote it: "5")',
        "error: web.yaml:8: metadata.labels.canary: must be a string, not a boolean (YAML 1.1 reads unquoted "
        "true/false, yes/no and on/off as booleans; quote it)"]


def test_keys_that_are_not_strings_are_refused_one_line_each_never_as_duplicates(validate, tmp_path):
    """Labels ``1`` and ``true`` were reported as one duplicate key (Python's 1 == True); kubectl
    sends them as "1" and "true". Each is refused by its own line and field, and so is a list used
    as a key (it was "found unhashable key" with no field)."""
    (tmp_path / "a.yaml").write_text(
        "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata:\n  name: a\n  labels:\n    1: x\n"
        "    true: y\nspec: {image: nginx:1, replicas: 1, port: 80}\n")
    (tmp_path / "b.yaml").write_text(
        "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata:\n  name: b\n  labels:\n    ? [a, b]\n"
        "    : z\nspec: {image: nginx:1, replicas: 1, port: 80}\n")
    proc = validate("--path", ".", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "invalid: 3 problems in 2 files\n"
    assert proc.stderr.splitlines() == [
        'error: a.yaml:6: metadata.labels.1: key 1 is an integer, not a string (kubectl would make it "1"); '
        'quote it: "1"',
        'error: a.yaml:7: metadata.labels.true: key true is a boolean, not a string (kubectl would make it "true"); '
        'quote it: "true"',
        "error: b.yaml:6: metadata.labels: a list cannot be a key: keys must be strings (JSON, and so Kubernetes, "
        "has no other keys)"]
    (tmp_path / "a.yaml").write_text((tmp_path / "a.yaml").read_text().replace("1: x", "'1': x").replace(
        "true: y", '"true": y'))
    (tmp_path / "b.yaml").unlink()
    assert validate("--path", ".", cwd=tmp_path).returncode == 0  # quoted: two labels, as kubectl sends them


def test_an_application_defined_twice_is_named_at_each_metadata_name(validate, tmp_path):
    """The duplicate-Application error cited each document's first line against the field
    metadata.name; it cites the line of each metadata.name, across files and within a List."""
    (tmp_path / "a.yaml").write_text("# web\n" + app_yaml("web"))
    items = "".join("- " + app_yaml(name).replace("\n", "\n  ").rstrip(" ") for name in ("api", "db", "api"))
    (tmp_path / "b.yaml").write_text("---\n" + app_yaml("web") + "---\napiVersion: v1\nkind: List\nitems:\n" + items)
    proc = validate("--path", ".", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "error: a.yaml:5: metadata.name: Application default/web is defined more than once: a.yaml:5, b.yaml:5",
        "error: b.yaml:5: metadata.name: Application default/web is defined more than once: a.yaml:5, b.yaml:5",
        "error: b.yaml:17: metadata.name: Application default/api is defined more than once: b.yaml:17, b.yaml:33",
        "error: b.yaml:33: metadata.name: Application default/api is defined more than once: b.yaml:17, b.yaml:33"]
    for line in (5, 17, 33):
        assert "name:" in (tmp_path / "b.yaml").read_text().splitlines()[line - 1]


def test_an_unknown_field_gets_the_closest_known_one(validate, tmp_path):
    (tmp_path / "web.yaml").write_text(app_yaml("web").replace("replicas: 1", "replica: 1").replace(
        "metadata:", "metdata: {}\nmetadata:"))
    proc = validate("--path", ".", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "error: web.yaml:3: metdata: unknown field (did you mean metadata?) (allowed: apiVersion, kind, metadata, "
        "spec, status)",
        f"error: web.yaml:8: spec.replica: unknown field (did you mean spec.replicas?) (allowed: {SPEC_FIELDS})"]


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_log_format_json_is_the_log_set_up_of_sync(tmp_path, how):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITOPS_AGENT_", "KUBE"))}
    env["HOME"] = str(tmp_path)
    args = ["--log-level", "INFO", "--path", "sample-repo"]
    if how == "flag":
        args += ["--log-format", "json"]
    else:
        env["GITOPS_AGENT_LOG_FORMAT"] = "json"
    proc = subprocess.run([sys.executable, "-m", "agent", "validate", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("valid: 5 files"), proc.stderr
    entry = json.loads(proc.stderr.splitlines()[-1])
    assert entry["logger"] == "agent.validate" and entry["level"] == "info"
    assert entry["message"] == "validated sample-repo" and entry["files"] == 5 and entry["applications"] == 6
    text = subprocess.run([sys.executable, "-m", "agent", "validate", "--path", "sample-repo", "--log-level", "INFO"],
                          cwd=ROOT, env={**env, "GITOPS_AGENT_LOG_FORMAT": "text"}, capture_output=True, text=True,
                          timeout=60).stderr
    assert " INFO agent.validate: validated sample-repo " in text and "files=5" in text


@pytest.mark.parametrize("command", [["validate", "--path", "."], ["sync", "--repo", "/r", "--kubeconfig", "/nonexistent"]])
def test_log_format_json_makes_every_error_line_a_json_object(tmp_path, command):
    """With ``--log-format json`` a log collector parses every line of stderr: the problems a
    command ends with are JSON objects too (level error), a file's with its file, line and field."""
    (tmp_path / "web.yaml").write_text(app_yaml("web").replace("replicas: 1", "replica: 1"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITOPS_AGENT_", "KUBE"))}
    env["HOME"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "agent", *command, "--log-format", "json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    entries = [json.loads(line) for line in proc.stderr.splitlines()]  # every line parses
    assert proc.returncode == 2 and entries and all(e["level"] == "error" and e["logger"] == "agent" for e in entries)
    if command[0] == "validate":
        assert [(e["file"], e["line"], e["field"]) for e in entries] == [("web.yaml", 7, "spec.replica")]
        assert entries[0]["message"].startswith("web.yaml:7: spec.replica: unknown field")
    else:
        assert len(entries) == 1 and "/nonexistent" in entries[0]["message"]
    plain = subprocess.run([sys.executable, "-m", "agent", *command], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=60)
    assert [e["message"] for e in entries] == [line.removeprefix("error: ") for line in plain.stderr.splitlines()]


def _shell(command: str, tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITOPS_AGENT_", "KUBE"))}
    env["HOME"] = str(tmp_path)
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["validate --path sample-repo -o json", "validate --path sample-repo",
                                     "sync --help", "sync --repo x --kubeconfig /nonexistent -o json"])
def test_a_full_stdout_is_one_line_and_exit_2(tmp_path, command):
    proc = _shell(f"{sys.executable} -m agent {command} > /dev/full", tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == "error: writing to stdout failed: No space left on device"


@pytest.mark.parametrize("redirect", [">&-", "2>&-"])
def test_a_closed_stdout_or_stderr_ends_quietly_with_exit_2(tmp_path, redirect):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.yaml").write_text(app_yaml("Bad_Name"))
    target = "sample-repo" if redirect == ">&-" else str(bad)
    proc = _shell(f"{sys.executable} -m agent validate --path {target} {redirect}", tmp_path)
    assert proc.returncode == 2
    # with stderr closed its errors are lost, never sent to stdout instead
    assert proc.stdout == ("" if redirect == ">&-" else "invalid: 1 problem in 1 file\n") and proc.stderr == ""
    valid = _shell(f"{sys.executable} -m agent validate --path sample-repo 2>&-", tmp_path)
    assert valid.returncode == 0 and valid.stdout.startswith("valid: 5 files")  # nothing was lost


def test_a_broken_pipe_ends_quietly_with_exit_2(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITOPS_AGENT_", "KUBE"))}
    proc = subprocess.Popen([sys.executable, "-m", "agent", "validate", "--path", "sample-repo", "-o", "json"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader went away before the report was written (``| head`` that ended)
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == 2
    assert stderr == ""  # no traceback, no "Exception ignored", no error line


def _repo_with_a_submodule(tmp_path) -> tuple[GitRepo, GitRepo]:
    """A repository whose apps/ holds web.yaml and the submodule apps/s (holding api.yaml,
    URL ../sub.git), recorded as a gitlink."""
    sub = GitRepo.create(tmp_path / "sub")
    sub.write("api.yaml", app_yaml("api"))
    sub.commit("sub")
    repo = GitRepo.create(tmp_path / "repo")
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.git("config", "-f", ".gitmodules", "submodule.s.path", "apps/s")
    repo.git("config", "-f", ".gitmodules", "submodule.s.url", "../sub.git")
    repo.git("add", "apps", ".gitmodules")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{sub.head()},apps/s")
    repo.git("commit", "-qm", "web, and a submodule")
    return repo, sub


def test_a_private_repository_and_its_same_host_submodule_are_read_with_the_token(validate, tmp_path):
    """``validate --repo`` reads the commit, submodules included, with the token it fetched
    with: a private submodule on the repository's own server is fetched with it too."""
    import base64

    from tests import faults

    token = "validate-token-0044"
    repo, sub = _repo_with_a_submodule(tmp_path)
    with faults.GitHttpServer(tmp_path / "srv") as server:
        server.required_auth = "Basic " + base64.b64encode(f"git:{token}".encode()).decode()
        faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
        faults.bare_clone(sub.path, tmp_path / "srv" / "sub.git")
        (tmp_path / "token").write_text(token + "\n")
        proc = validate("--repo", server.url("apps.git"), "--path", "apps", "--git-token-file",
                        str(tmp_path / "token"), "--cache-dir", str(tmp_path / "cache"), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert sorted(a["name"] for a in json.loads(proc.stdout)["applications"]) == ["default/api", "default/web"]
    assert token not in proc.stdout + proc.stderr


def _validate_unprivileged(tmp_path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITOPS_AGENT_", "KUBE"))}
    env["HOME"] = str(tmp_path)
    proc = subprocess.run(unprivileged([sys.executable, "-m", "agent", "validate", *args]), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    print(f"$ validate {' '.join(args)}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}")
    assert "Traceback" not in proc.stderr
    return proc


def test_a_directory_under_path_that_cannot_be_read_fails_validation_instead_of_being_skipped(tmp_path):
    tree = tmp_path / "apps"
    (tree / "ok").mkdir(parents=True)
    (tree / "ok" / "web.yaml").write_text(app_yaml("web"))
    (tree / "locked" / "deeper").mkdir(parents=True)
    (tree / "locked" / "deeper" / "bad.yaml").write_text("kind: [\n")
    (tree / "locked").chmod(0)
    try:
        proc = _validate_unprivileged(tmp_path, "--path", str(tree))
    finally:
        (tree / "locked").chmod(0o755)
    assert proc.returncode == 2
    assert f"{tree}/locked: cannot be read: Permission denied" in proc.stderr


def test_a_cache_dir_below_a_directory_that_cannot_be_searched_is_one_line_with_exit_2(tmp_path):
    (tmp_path / "closed").mkdir()
    (tmp_path / "closed").chmod(0)
    try:
        proc = _validate_unprivileged(tmp_path, "--repo", str(ROOT), "--cache-dir", str(tmp_path / "closed" / "sub"))
    finally:
        (tmp_path / "closed").chmod(0o755)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "--cache-dir" in proc.stderr and "Permission denied" in proc.stderr


def test_a_path_below_a_directory_that_cannot_be_searched_names_the_flag(tmp_path):
    (tmp_path / "closed" / "apps").mkdir(parents=True)
    (tmp_path / "closed").chmod(0)
    try:
        proc = _validate_unprivileged(tmp_path, "--path", str(tmp_path / "closed" / "apps"))
    finally:
        (tmp_path / "closed").chmod(0o755)
    assert proc.returncode == 2 and "--path" in proc.stderr and "cannot be read: Permission denied" in proc.stderr


@pytest.mark.parametrize("broken", ["a file", "an empty directory"])
def test_a_broken_mirror_in_the_cache_says_so_and_how_to_recover(validate, tmp_path, broken):
    repo = GitRepo.create(tmp_path / "repo")
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit("web")
    cache = tmp_path / "cache"
    assert validate("--repo", str(repo.path), "--path", "apps", "--cache-dir", str(cache)).returncode == 0
    [mirror] = [p for p in cache.iterdir() if p.name.endswith(".git")]
    shutil.rmtree(mirror)
    mirror.write_text("") if broken == "a file" else mirror.mkdir()
    proc = validate("--repo", str(repo.path), "--path", "apps", "--cache-dir", str(cache))
    assert proc.returncode == 2
    assert f"the cached mirror '{mirror}' is not a Git repository; delete it and the next pass fetches again" in proc.stderr


def test_the_verdict_counts_one_file_and_one_application_in_the_singular(validate, tmp_path):
    (tmp_path / "web.yaml").write_text(app_yaml("web"))
    proc = validate("--path", str(tmp_path))
    assert proc.returncode == 0 and proc.stdout.startswith("valid: 1 file, 1 Application (")


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_no_submodules_refuses_a_submodule_in_the_commit_as_sync_does(validate, tmp_path, monkeypatch, how):
    """``validate --no-submodules`` (or GITOPS_AGENT_SUBMODULES=false, as set for ``sync`` in the
    same CI job) fails on a submodule under --path with sync's own words, before fetching it."""
    repo, _ = _repo_with_a_submodule(tmp_path)
    args = ["--repo", str(repo.path), "--path", "apps", "--cache-dir", str(tmp_path / "cache")]
    if how == "flag":
        proc = validate(*args, "--no-submodules")
    else:
        monkeypatch.setenv("GITOPS_AGENT_SUBMODULES", "false")
        proc = subprocess.run([sys.executable, "-m", "agent", "validate", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "HOME": str(validate.home)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "submodule 'apps/s' (../sub.git) is under --path, and --no-submodules refuses submodules" in proc.stderr
    assert len([p for p in (tmp_path / "cache").iterdir() if p.name.endswith(".git")]) == 1  # the submodule's: none


def test_no_submodules_refuses_a_submodule_checkout_on_disk_and_the_default_reads_it(validate, tmp_path):
    """On disk a submodule is a checkout (a directory holding .git): read with its files by
    default, refused by name with --no-submodules, as in a commit."""
    tree = tmp_path / "apps"
    (tree / "s").mkdir(parents=True)
    (tree / "web.yaml").write_text(app_yaml("web"))
    (tree / "s" / ".git").write_text("gitdir: ../../.git/modules/s\n")
    (tree / "s" / "api.yaml").write_text(app_yaml("api"))
    assert validate("--path", str(tree)).stdout.startswith("valid: 2 files, 2 Applications")
    proc = validate("--path", str(tree), "--no-submodules")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == (f"error: {tree}/s: is a Git submodule (it holds .git), and "
                                           "--no-submodules refuses submodules")


def test_validate_sync_and_run_describe_submodules_in_the_same_words():
    def help_of(command: str) -> str:
        out = subprocess.run([sys.executable, "-m", "agent", command, "--help"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60, env={**os.environ, "COLUMNS": "1000"}).stdout
        lines = [line.strip() for line in out.splitlines()]
        start = next(i for i, line in enumerate(lines) if line.startswith("--submodules"))
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("-") or not lines[i])
        return " ".join(lines[start:end])
    assert help_of("validate") == help_of("sync") == help_of("run")
    assert "--no-submodules a submodule there fails" in help_of("validate")


@pytest.mark.parametrize("given", ["a wrong token", "no token"])
def test_credentials_the_server_refuses_are_named_as_such_for_the_url(validate, tmp_path, given):
    """Git says "could not read Username ... terminal prompts disabled" for an HTTP 401: the
    agent says the server refused the credentials (or asked for some), for that URL, without
    the token."""
    import base64

    from tests import faults

    repo = GitRepo.create(tmp_path / "repo")
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit("web")
    (tmp_path / "token").write_text("wrong-token-0051\n")
    args = ["--git-token-file", str(tmp_path / "token")] if given == "a wrong token" else []
    with faults.GitHttpServer(tmp_path / "srv") as server:
        server.required_auth = "Basic " + base64.b64encode(b"git:right-token-0051").decode()
        faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
        url = server.url("apps.git")
        proc = validate("--repo", url, "--path", "apps", "--cache-dir", str(tmp_path / "cache"), *args)
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    if given == "a wrong token":
        assert line == (f"error: fetching {url} failed: the server refused the credentials (HTTP 401): check the "
                        "token (--git-token-file, GITOPS_AGENT_GIT_TOKEN or the password in the URL), its access to "
                        "this repository and the user (--git-username, default git)")
    else:
        assert line == (f"error: fetching {url} failed: the server asks for credentials (HTTP 401) and none were "
                        "sent: give a token with --git-token-file or GITOPS_AGENT_GIT_TOKEN (it is sent only to "
                        "--repo's own scheme, host and port)")
    assert "wrong-token" not in proc.stdout + proc.stderr and "Username" not in line


@pytest.mark.parametrize("how", ["user in the URL", "user and password in the URL", "--git-username"])
def test_the_user_written_in_the_repo_url_is_the_one_sent_with_the_token(validate, tmp_path, how):
    import base64

    from tests import faults

    repo = GitRepo.create(tmp_path / "repo")
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit("web")
    (tmp_path / "token").write_text("token-0052\n")
    with faults.GitHttpServer(tmp_path / "srv") as server:
        server.required_auth = "Basic " + base64.b64encode(b"alice:token-0052").decode()
        faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
        url, args = {"user in the URL": (server.url("apps.git", "alice"), ["--git-token-file", str(tmp_path / "token")]),
                     "user and password in the URL": (server.url("apps.git", "alice:token-0052"), []),
                     "--git-username": (server.url("apps.git", "alice"), ["--git-token-file", str(tmp_path / "token"),
                                                                          "--git-username", "alice"])}[how]
        proc = validate("--repo", url, "--path", "apps", "--cache-dir", str(tmp_path / "cache"), *args)
    assert proc.returncode == 0, proc.stderr
    assert "token-0052" not in proc.stdout + proc.stderr


def test_on_disk_a_symlink_is_read_within_the_work_tree_as_sync_reads_it_within_the_commit(validate, tmp_path):
    """A commit's symlink is read when it stays in the repository, wherever --path is; on disk
    the repository is the Git work tree holding --path (outside one, --path itself)."""
    repo = GitRepo.create(tmp_path / "r")
    repo.write("other/shared.yaml", app_yaml("shared"))
    repo.write("apps/web.yaml", app_yaml("web"))
    (repo.path / "apps" / "link.yaml").symlink_to("../other/shared.yaml")
    (repo.path / "apps" / "away.yaml").symlink_to("../../outside.yaml")
    (tmp_path / "outside.yaml").write_text(app_yaml("outside"))
    repo.commit("a symlink within the repository and one leaving it")
    on_disk = validate("--path", str(repo.path / "apps"))
    in_git = validate("--repo", str(repo.path), "--path", "apps", "--cache-dir", str(tmp_path / "cache"))
    for proc in (on_disk, in_git):
        assert proc.returncode == 2 and "invalid: 1 problem in 1 of 3 files" in proc.stdout, proc.stdout + proc.stderr
        assert "away.yaml: symlink to '../../outside.yaml' is refused (it leaves the repository)" in proc.stderr
    plain = tmp_path / "plain"
    (plain / "apps").mkdir(parents=True)
    (plain / "other.yaml").write_text(app_yaml("other"))
    (plain / "apps" / "link.yaml").symlink_to("../other.yaml")
    proc = validate("--path", str(plain / "apps"))
    assert proc.returncode == 2 and "symlink to '../other.yaml' is refused (it leaves the directory)" in proc.stderr


def test_no_submodules_refuses_a_path_inside_a_submodule_checkout(validate, tmp_path):
    """--path itself in a submodule's checkout (its .git a file naming the superproject's
    .git/modules/...): refused by --no-submodules, read by default; a linked work tree
    (``git worktree``, .git naming .git/worktrees/...) is no submodule."""
    for kind, gitdir in [("submodule", "../../.git/modules/team"), ("worktree", "/r/.git/worktrees/wt")]:
        tree = tmp_path / kind / "apps" / "team"
        tree.mkdir(parents=True)
        (tmp_path / kind / ".git").mkdir()
        (tree / ".git").write_text(f"gitdir: {gitdir}\n")
        (tree / "web.yaml").write_text(app_yaml("web"))
        assert validate("--path", str(tree)).returncode == 0
        proc = validate("--path", str(tree), "--no-submodules")
        if kind == "worktree":
            assert proc.returncode == 0, proc.stderr
        else:
            assert proc.returncode == 2 and proc.stderr.splitlines()[0] == (
                f"error: {tree}: is in the checkout of a Git submodule ({tree}), and --no-submodules refuses "
                "submodules")


def test_a_cache_dir_checked_by_many_processes_at_once_is_never_refused(tmp_path):
    """The check makes a missing cache directory and removes it again; another process doing
    the same at that moment finds it made (EEXIST), which is no reason to refuse it."""
    from concurrent.futures import ThreadPoolExecutor

    from agent.cli.flags import cache_dir
    for round_ in range(40):
        given = str(tmp_path / f"r{round_}" / "cache")
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(cache_dir, [given] * 8)) == [given] * 8


def test_an_ingress_snippet_annotation_is_refused_offline_at_its_line_unless_allowed(validate, tmp_path):
    """Issue 42: an ingress-nginx server-snippet from Git runs in the controller that serves every team's hosts."""
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "web.yaml").write_text(
        "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: web}\nspec:\n  image: nginx\n"
        "  port: 80\n  ingress:\n    host: shop.example.com\n    annotations:\n"
        "      nginx.ingress.kubernetes.io/rewrite-target: /\n"
        "      nginx.ingress.kubernetes.io/server-snippet: 'location /admin { proxy_pass http://10.0.0.1; }'\n")
    proc = validate("--path", "apps", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (
        "error: apps/web.yaml:11: spec.ingress.annotations.nginx.ingress.kubernetes.io/server-snippet: "
        "'nginx.ingress.kubernetes.io/server-snippet' injects configuration into the ingress controller, which serves "
        "every namespace's hosts from it; refused unless the operator allows it (--allow-ingress-snippets)\n")
    assert validate("--path", "apps", "--allow-ingress-snippets", cwd=tmp_path).returncode == 0


def test_every_schedule_refusal_is_a_file_line_field_rule_and_exit_2(validate, tmp_path):
    """Offline, no cluster: names, the CronJob name's length, cron fields, TZ= prefixes, time
    zones and out-of-range numbers of spec.schedules (docs/applications.md#schedules)."""
    (tmp_path / "shop.yaml").write_text(app_yaml("shop") + """\
  schedules:
    Nightly: {schedule: '@daily'}
    report:
      schedule: 0 24 * * *
      timeZone: Mars/Olympus
      retries: 101
    tz: {schedule: 'CRON_TZ=UTC 0 3 * * *', timeoutSeconds: 0, keep: {failed: -1}}
    every: {schedule: '@every 1h', concurrencyPolicy: Sometimes}
    a-very-long-schedule-name-that-makes-the-cronjob-too-long: {schedule: '@hourly'}
""")
    proc = validate("--path", ".", cwd=tmp_path)
    assert proc.returncode == 2
    errors = [line.split(": ", 3)[1:3] for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        ["shop.yaml:10", "spec.schedules.Nightly"],
        ["shop.yaml:12", "spec.schedules.report.schedule"],
        ["shop.yaml:13", "spec.schedules.report.timeZone"],
        ["shop.yaml:14", "spec.schedules.report.retries"],
        ["shop.yaml:15", "spec.schedules.tz.keep.failed"],
        ["shop.yaml:15", "spec.schedules.tz.schedule"],
        ["shop.yaml:15", "spec.schedules.tz.timeoutSeconds"],
        ["shop.yaml:16", "spec.schedules.every.concurrencyPolicy"],
        ["shop.yaml:16", "spec.schedules.every.schedule"],
        ["shop.yaml:17", "spec.schedules.a-very-long-schedule-name-that-makes-the-cronjob-too-long"],
    ], proc.stderr
    assert "higher than the maximum value (23)" in proc.stderr and "set timeZone instead" in proc.stderr
    assert "must be at most 52 characters (got 62)" in proc.stderr


def test_a_worker_is_valid_and_its_ingress_and_port_probes_are_refused_offline_at_their_lines(validate, tmp_path):
    """Issue 43: an Application without spec.port is a worker, with no Service: nothing to send an
    Ingress's traffic to, and no port for an httpGet or tcpSocket probe."""
    (tmp_path / "apps").mkdir()
    worker = ("apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: jobs}\nspec:\n  image: jobs:1\n"
              "  livenessProbe:\n    exec: {command: [/bin/check]}\n")
    (tmp_path / "apps" / "jobs.yaml").write_text(worker)
    assert validate("--path", "apps", cwd=tmp_path).returncode == 0
    (tmp_path / "apps" / "jobs.yaml").write_text(worker + "  readinessProbe:\n    tcpSocket: {}\n"
                                                 "  ingress: {host: jobs.example.com}\n")
    proc = validate("--path", "apps", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (
        "error: apps/jobs.yaml:9: spec.readinessProbe.tcpSocket: needs spec.port: an Application without a port (a "
        "worker) has no port to probe; use exec\n"
        "error: apps/jobs.yaml:10: spec.ingress: needs spec.port: an Ingress sends traffic to the Service, and an "
        "Application without a port (a worker) has none\n")


def test_ports_and_their_probes_are_refused_offline_at_their_lines(validate, tmp_path):
    """Issue 44 items 5 and 9: a port name or number given twice (spec.port's number, its name
    http, another entry's number), a name that is not an IANA service name and a probe of a port
    the Application does not have, each one line ``file:line: field: rule``, exit 2."""
    (tmp_path / "apps").mkdir()
    head = "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: shop}\nspec:\n  image: shop:1\n"
    good = head + ("  port: 8080\n  ports: {metrics: 9090}\n"
                   "  startupProbe:\n    httpGet: {path: /healthz, port: metrics}\n")
    (tmp_path / "apps" / "shop.yaml").write_text(good)
    assert validate("--path", "apps", cwd=tmp_path).returncode == 0
    (tmp_path / "apps" / "shop.yaml").write_text(head + (
        "  port: 8080\n  ports:\n    http: 81\n    admin: 8080\n    metrics: 9090\n    stats: 9090\n"
        "    Debug_Port: 9999\n  startupProbe:\n    tcpSocket: {port: grpc}\n"))
    proc = validate("--path", "apps", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (
        "error: apps/shop.yaml:8: spec.ports.http: the name http is spec.port's (the Service's main port) and cannot "
        "be given here; name this port otherwise\n"
        "error: apps/shop.yaml:9: spec.ports.admin: is spec.port's number (8080): each port number is given once; "
        "spec.ports holds only the other ports\n"
        "error: apps/shop.yaml:11: spec.ports.stats: has the number of spec.ports.metrics (9090): each port number "
        "is given once\n"
        "error: apps/shop.yaml:12: spec.ports.Debug_Port: the port name must be an IANA service name: at most 15 "
        "lowercase letters, digits and '-', with at least one letter, not starting or ending with '-' and no '--' "
        "(got \"Debug_Port\")\n"
        "error: apps/shop.yaml:14: spec.startupProbe.tcpSocket.port: must be the Application's port (8080) or its "
        "name http or a port of spec.ports by name or number (Debug_Port 9999, admin 8080, http 81, metrics 9090, "
        "stats 9090) (got \"grpc\")\n")

def test_valid_tasks_are_valid(validate, tmp_path):
    """Issue 43: the pass runs tasks (agent/engine/taskgate.py), so a valid one is valid
    (docs/applications.md#tasks)."""
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "shop.yaml").write_text(
        "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: shop}\nspec:\n"
        "  image: shop:1.4\n  port: 8080\n  tasks:\n    migrate:\n      args: [migrate]\n")
    proc = validate("--path", "apps", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr


def test_tasks_are_refused_offline_at_their_line(validate, tmp_path):
    """Issue 43: a task that would never finish, a Job name Kubernetes refuses, a bad when, retries or timeout,
    a task named as a schedule."""
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "shop.yaml").write_text(
        "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: shop-frontend-europe-west}\nspec:\n"
        "  image: shop:1.4\n  port: 8080\n  tasks:\n    migrate:\n      args: [migrate]\n"
        "    serve:\n      env: {MODE: task}\n"
        "    Warm_Cache:\n      image: curl:8\n      when: AfterRollout\n"
        "    refresh-the-search-index-now-please:\n      command: [/refresh]\n"
        "    report:\n      command: [/report]\n      when: Later\n      retries: 11\n      timeoutSeconds: 0\n"
        "  schedules:\n    migrate: {schedule: '@daily', command: [/migrate]}\n")
    proc = validate("--path", "apps", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (
        "error: apps/shop.yaml:8: spec.tasks.migrate: a schedule has this name too: a schedule's Jobs are named "
        "<application>-<name>-<minutes> and a task's <application>-<name>-<8 hex digits>, so they could collide; "
        "rename one\n"
        "error: apps/shop.yaml:10: spec.tasks.serve: runs the Application's own image with neither command nor args: "
        "it would start the server, which never finishes; give command or args\n"
        "error: apps/shop.yaml:12: spec.tasks.Warm_Cache: the task name must be a DNS label (RFC 1123): at most 63 "
        "lowercase letters, digits and '-', starting and ending with a letter or digit (got \"Warm_Cache\")\n"
        "error: apps/shop.yaml:15: spec.tasks.refresh-the-search-index-now-please: the Job name "
        "'shop-frontend-europe-west-refresh-the-search-index-now-please-xxxxxxxx' (<application>-<task>-<8 hex "
        "digits>) would be 70 characters, over Kubernetes' 63: shorten the task's name by 7\n"
        "error: apps/shop.yaml:19: spec.tasks.report.when: must be one of BeforeRollout, AfterRollout (got \"Later\")\n"
        "error: apps/shop.yaml:20: spec.tasks.report.retries: must be an integer between 0 and 10 (got 11)\n"
        "error: apps/shop.yaml:21: spec.tasks.report.timeoutSeconds: must be an integer between 1 and 86400 (got 0)\n")
    assert proc.stdout == "invalid: 7 problems in 1 file\n"


def test_every_placement_and_volume_refusal_is_a_file_line_field_rule_and_exit_2(validate, tmp_path):
    """Offline, no cluster (issue 44 item 9): a toleration's value with operator Exists,
    tolerationSeconds without effect NoExecute, an unknown and a duplicate spread word, a volume
    path that is not absolute, one over a file, one under another volume
    (docs/applications.md#placement, #volumes)."""
    (tmp_path / "shop.yaml").write_text(app_yaml("shop") + """\
  placement:
    tolerations:
    - {key: gpu, operator: Exists, value: 'yes'}
    - {key: spot, effect: NoSchedule, tolerationSeconds: 30}
    spreadAcross: [zone, zone]
  files:
    /etc/shop/app.conf: {content: x}
  volumes:
    tmp: {emptyDir: {}}
    /etc/shop: {emptyDir: {}}
    /cache: {emptyDir: {sizeLimit: 1Gi}}
    /cache/a: {emptyDir: {medium: Memory}}
""")
    (tmp_path / "rack.yaml").write_text(app_yaml("rack") + "  placement: {spreadAcross: [rack]}\n")
    proc = validate("--path", ".", cwd=tmp_path)
    assert proc.returncode == 2
    errors = [line.split(": ", 3)[1:3] for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        ["rack.yaml:9", "spec.placement.spreadAcross[0]"],
        ["shop.yaml:11", "spec.placement.tolerations[0].value"],
        ["shop.yaml:12", "spec.placement.tolerations[1].tolerationSeconds"],
        ["shop.yaml:13", "spec.placement.spreadAcross[1]"],
        ["shop.yaml:17", "spec.volumes.tmp"],
        ["shop.yaml:18", "spec.volumes./etc/shop"],
        ["shop.yaml:20", "spec.volumes./cache/a"],
    ], proc.stderr
    for words in ('must be one of zone, node (got "rack")', "'zone' is given twice",
                  "must not be given with operator Exists", "applies only to effect NoExecute",
                  "lies under the volume /cache", "overlaps the file /etc/shop/app.conf (spec.files)",
                  'the path must be an absolute path'):
        assert words in proc.stderr, words
