"""Unit tests for the CI parts: crd packaging, validate's checks, diffs, report documents."""

import json
from pathlib import Path

import jsonschema
import pytest

from agent.api import crd
from agent.api.schema import SPEC_SCHEMA
from agent.cli import output, progress, reference, validate
from agent.engine import diff
from agent.engine.report import CONFIGURED, CREATED, FAILED, PRUNED, SKIPPED, UNCHANGED, Report
from agent.manifests import metadata
from agent.manifests.loader import ManifestError

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((ROOT / "agent" / "report.schema.json").read_text())
SHA = "5f0c2e3d9a1b4c6d8e7f00112233445566778899"


def app(name="web", meta_extra="", spec="  image: nginx:latest\n  replicas: 1\n  port: 80\n"):
    return f"apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata:\n  name: {name}\n{meta_extra}spec:\n{spec}"


def check(files, namespace="default"):
    return validate.check({p: t.encode() for p, t in files.items()}, namespace)


def test_the_repository_crd_is_the_one_generated_from_the_schema():
    assert (ROOT / "crd.yaml").read_text(encoding="utf-8") == reference.crd_text(), "crd.yaml is stale: run make docs"
    assert crd.openapi_schema({})["properties"]["spec"] is SPEC_SCHEMA


@pytest.mark.parametrize("spec,field", [
    ({"image": "", "replicas": 1, "port": 80}, ("spec", "image")),
    ({"image": "nginx latest", "replicas": 1, "port": 80}, ("spec", "image")),
    ({"image": " nginx", "replicas": 1, "port": 80}, ("spec", "image")),
    ({"image": "x", "replicas": -1, "port": 80}, ("spec", "replicas")),
    ({"image": "x", "replicas": True, "port": 80}, ("spec", "replicas")),
    ({"image": "x", "replicas": 1, "port": 65536}, ("spec", "port")),
    ({"replicas": 1, "port": 80}, ("spec",)),
    ({"image": "x", "replicas": 1, "port": 80, "suspend": "true"}, ("spec", "suspend")),
    ({"image": "x", "replicas": 1, "port": 80, "suspend": 0}, ("spec", "suspend")),
])
def test_crd_schema_problems(spec, field):
    found = crd.problems({"apiVersion": "heumsi.github.io/v1", "kind": "Application",
                          "metadata": {"name": "a"}, "spec": spec})
    assert {sub for sub, _ in found} == {field}  # "" breaks minLength and the no-whitespace pattern


def test_crd_ignores_status_and_accepts_a_valid_document():
    assert crd.problems({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": {"name": "a"},
                         "spec": {"image": "x", "replicas": 0, "port": 1}, "status": {"replicas": "bad"}}) == []
    assert crd.problems({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": {"name": "a"},
                         "spec": {"image": "x"}}) == []  # a worker: no port


@pytest.mark.parametrize("key,ok", [("tier", True), ("app.kubernetes.io/name", True), ("a_b.c-d", True),
                                    ("bad key", False), ("-x", False), ("Example.COM/x", False), ("/x", False),
                                    ("x/", False), ("a" * 64, False), ("a" * 63, True)])
def test_qualified_names(key, ok):
    assert (metadata.qualified_name_ok(key)) == ok


def test_every_class_of_error_in_one_run_with_lines():
    result = check({
        "syntax.yaml": "a: [\n",
        "schema.yaml": app("schema", spec="  image: x\n  replicas: -1\n  port: 80\n  extra: 1\n"),
        "name.yaml": app("Bad_Name"),
        "labels.yaml": app("labels", "  labels:\n    tier: 5\n    'bad key': x\n    ok: 'no spaces allowed'\n"
                           "  finalizers: [x]\n"),
        "dup1.yaml": app("dup"), "dup2.yaml": "# comment\n" + app("dup"),
        "good.yaml": app("good"),
    })
    found = {(e.path, e.line, e.field) for e in result.errors}
    assert ("syntax.yaml", 2, None) in found
    assert {("schema.yaml", 7, "spec.replicas"), ("schema.yaml", 9, "spec.extra")} <= found
    assert ("name.yaml", 4, "metadata.name") in found
    assert {("labels.yaml", 6, "metadata.labels.tier"), ("labels.yaml", 7, "metadata.labels.bad key"),
            ("labels.yaml", 8, "metadata.labels.ok"), ("labels.yaml", 9, "metadata.finalizers")} <= found
    assert {("dup1.yaml", 4, "metadata.name"), ("dup2.yaml", 5, "metadata.name")} <= found
    assert [m.name for m in result.manifests] == ["good"] and result.files == 7


def test_metadata_problems_are_reported_even_when_the_spec_is_invalid():
    result = check({"a.yaml": app("a", "  labels: {tier: 5}\n", spec="  image: x\n  replicas: -1\n  port: 80\n")})
    assert {e.field for e in result.errors} == {"metadata.labels.tier", "spec.replicas"}


def test_annotation_size_limit():
    big = "x" * (metadata.ANNOTATIONS_MAX_BYTES + 1)
    result = check({"a.yaml": app("a", f"  annotations:\n    note: {big}\n")})
    assert [e.field for e in result.errors] == ["metadata.annotations"]


def test_read_directory_skips_hidden_and_refuses_escaping_symlinks(tmp_path):
    (tmp_path / "apps" / ".github").mkdir(parents=True)
    (tmp_path / "apps" / ".github" / "ci.yml").write_text("on: push\n")
    (tmp_path / "apps" / "a.yaml").write_text(app("a"))
    (tmp_path / "apps" / "notes.txt").write_text("x")
    (tmp_path / "outside.yaml").write_text(app("o"))
    (tmp_path / "apps" / "link.yaml").symlink_to(tmp_path / "outside.yaml")
    (tmp_path / "apps" / "big.yaml").write_text("#" * 1000)
    files, errors = validate.read_directory(str(tmp_path / "apps"), max_file_bytes=500)
    assert sorted(files) == [f"{tmp_path}/apps/a.yaml"]
    assert sorted((Path(e.path).name, "leaves" in e.message or "limit" in e.message) for e in errors) == \
        [("big.yaml", True), ("link.yaml", True)]
    with pytest.raises(FileNotFoundError):
        validate.read_directory(str(tmp_path / "nope"))



def test_read_directory_applies_the_symlink_rules_of_a_commit_and_never_opens_a_fifo(tmp_path):
    import os

    (tmp_path / "apps" / "real").mkdir(parents=True)
    apps = tmp_path / "apps"
    (apps / "good.yaml").write_text(app("good"))
    (apps / "same.yaml").symlink_to("good.yaml")
    (apps / "a.yaml").symlink_to("b.yaml")  # a loop
    (apps / "b.yaml").symlink_to("a.yaml")
    (apps / "dir.yaml").symlink_to("real")  # a directory: listed by os.walk as one, never walked
    (apps / "outside.yml").symlink_to("/etc")
    (apps / "up.yaml").symlink_to("../x.yaml")
    (apps / "gone.yaml").symlink_to("missing.yaml")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "e.yaml").write_text(app("e"))
    (apps / "real" / "via").symlink_to(tmp_path / "elsewhere")
    (apps / "through.yaml").symlink_to("real/via/e.yaml")  # inside lexically, outside really
    os.mkfifo(apps / "p.yaml")
    files, errors = validate.read_directory(str(apps))
    assert sorted(files) == [f"{apps}/good.yaml", f"{apps}/same.yaml"]
    assert {Path(e.path).name: e.message for e in errors} == {
        "a.yaml": "symlink to 'b.yaml' is not a regular file; only file symlinks are followed",
        "b.yaml": "symlink to 'a.yaml' is not a regular file; only file symlinks are followed",
        "dir.yaml": "symlink to 'real' is not a regular file; only file symlinks are followed",
        "outside.yml": "symlink to absolute path '/etc' is refused (it leaves the directory)",
        "up.yaml": "symlink to '../x.yaml' is refused (it leaves the directory)",
        "gone.yaml": "symlink to 'missing.yaml' points to nothing",
        "through.yaml": "symlink to 'real/via/e.yaml' is refused (it leaves the directory)",
        "p.yaml": "is not a regular file (a FIFO); only regular files and file symlinks are read",
    }
    assert all(e.line is None and e.field is None for e in errors)


def live(kind="Deployment", replicas=1, **meta):
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "generation": 3,
                         "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [{"manager": "x"}],
                         "annotations": {"heumsi.github.io/source-commit": "abc"}, **meta},
            "spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate"}}, "status": {"replicas": 1}}


def test_strip_removes_noise_only():
    assert diff.strip(live()) == {"apiVersion": "apps/v1", "kind": "Deployment",
                                  "metadata": {"name": "web", "namespace": "ns"},
                                  "spec": {"replicas": 1, "strategy": {"type": "RollingUpdate"}}}


def test_unified_diff_shows_only_real_changes():
    assert diff.unified("Deployment/ns/web", live(), live(resourceVersion="8", generation=4)) == ""
    text = diff.unified("Deployment/ns/web", live(), live(replicas=3))
    assert "--- live/Deployment/ns/web" in text and "-  replicas: 1\n" in text and "+  replicas: 3\n" in text
    added = diff.unified("Deployment/ns/web", None, live())
    assert all(line.startswith(("+", "@@", "---")) for line in added.splitlines())
    removed = diff.unified("Deployment/ns/web", live(), None)
    assert "-kind: Deployment" in removed


def test_a_diff_of_objects_with_shared_parts_writes_every_value_out():
    """A pass's objects share equal parts (share.Memo): the Deployment's selector labels are
    the same mapping as its pod template's. YAML would print an anchor and aliases."""
    from agent.kube import share

    def shared(image):
        labels = {"app": "web"}
        return share.Memo().share({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web",
                                   "namespace": "ns", "labels": labels}, "spec": {"selector": {"matchLabels": labels},
                                   "template": {"metadata": {"labels": labels}, "spec": {"image": image}}}})
    text = diff.unified("Deployment/ns/web", shared("nginx:1"), shared("nginx:2"))
    assert "&id" not in text and "*id" not in text
    assert [line for line in text.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        "-      image: nginx:1", "+      image: nginx:2"]
    assert "".join(diff.dump(shared("nginx:1"))).count("app: web") == 3


def test_recording_pairs_live_with_dry_run_results():
    """``diff``'s Recording over a dry-run cluster: what is listed, paired with what the dry run
    answers for each apply and delete; nothing is kept."""
    from agent.kinds import registry
    from tests.unit.fakecluster import FakeCluster

    def deployment(name, replicas=1):
        return registry.BY_KIND["Deployment"].render(name, "ns", "u0", {"image": "nginx", "port": 80,
                                                                       "replicas": replicas})
    kube = FakeCluster(namespaces=("ns",))
    old = kube.add(deployment("old"))
    kube.add(deployment("web"))
    kube.dry_run = True
    rec = diff.Recording(kube)
    rec.list("apps", "Deployment")
    assert rec.served("heumsi.github.io", "v1") == {"applications", "applications/status"}  # passes through
    rec.apply(deployment("web", replicas=2))
    rec.apply({**deployment("new"), "status": {}})
    rec.delete(old)
    diffs = rec.diffs()
    assert sorted(diffs) == ["Deployment/ns/new", "Deployment/ns/old", "Deployment/ns/web"]
    assert "+  replicas: 2" in diffs["Deployment/ns/web"]
    body = {s: d.splitlines()[2:] for s, d in diffs.items()}
    assert not any(l.startswith("-") for l in body["Deployment/ns/new"]) and "+kind: Deployment" in body["Deployment/ns/new"]
    assert not any(l.startswith("+") for l in body["Deployment/ns/old"]) and "-kind: Deployment" in body["Deployment/ns/old"]
    assert [d["spec"]["replicas"] for d in kube.of_kind("Deployment")] == [1, 1]  # a dry run keeps nothing


def sample_report():
    report = Report(commit=SHA, fetch_seconds=0.25)
    report.add("ns/web", "Application/ns/web", UNCHANGED)
    report.add("ns/web", "Deployment/ns/web", CONFIGURED)
    report.add("ns/new", "Application/ns/new", CREATED)
    report.add("ns/gone", "Service/ns/gone", PRUNED)
    report.add("ns/bad", "Deployment/ns/bad", FAILED, "422 Invalid: nope")
    problem = ManifestError("apps/x.yaml", 7, "spec.replicas", "must be an integer between 0 and 2147483647 (got -1)")
    report.problems = [problem]
    report.errors.append(str(problem))
    report.errors.append("something else went wrong")
    return report


def test_a_skipped_application_is_counted_and_listed_as_skipped_in_every_format():
    report = Report(commit=SHA)
    report.add("ns/web", "Application/ns/web", UNCHANGED)
    report.add("ns/db", "Application/ns/db", SKIPPED, "backing off after 2 failures, next retry at T")
    report.backing_off["ns/db"] = object()  # what sync._waiting records beside the change
    doc = output.pass_document(report, command="sync", dry_run=False, exit_code=2, source={"repo": None, "ref": None,
                                                                                             "path": "."})
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    skipped = [o for a in doc["applications"] for o in a["objects"] if o["action"] == "skipped"]
    assert doc["counts"]["skipped"] == len(skipped) == 1 and doc["counts"]["unchanged"] == 1
    assert skipped[0]["subject"] == "Application/ns/db" and skipped[0]["message"].startswith("backing off")
    assert doc["ok"] is False  # never a success: the Application is still failing
    assert output.text(doc).splitlines()[-1] == "sync: failed (0 create, 0 update, 1 unchanged, 0 prune, 0 failed, 1 skipped)"
    assert "Application **skipped**" in output.markdown(doc)
    assert report.summary().endswith("1 unchanged, 0 pruned, 0 failed, 1 skipped; 1 Application skipped: ns/db")


def test_pass_document_validates_and_maps_actions():
    doc = output.pass_document(sample_report(), command="diff", dry_run=True, exit_code=2,
                               source={"repo": "https://***@example.com/r.git", "ref": None, "path": "."},
                               diffs={"Deployment/ns/web": "--- a\n+++ b\n"}, seconds=1.5)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["counts"] == {"create": 1, "update": 1, "unchanged": 1, "prune": 1, "recreate": 0, "adopt": 0, "failed": 1,
                             "kept": 0, "suspended": 0, "held": 0, "skipped": 0}
    objs = {o["subject"]: o for a in doc["applications"] for o in a["objects"]}
    assert objs["Deployment/ns/web"]["diff"] == "--- a\n+++ b\n" and objs["Application/ns/web"]["diff"] is None
    errors = doc["errors"]
    assert errors[0] == {"message": "must be an integer between 0 and 2147483647 (got -1)", "file": "apps/x.yaml", "line": 7,
                         "field": "spec.replicas", "subject": None}
    assert {"message": "422 Invalid: nope", "file": None, "line": None, "field": None,
            "subject": "Deployment/ns/bad"} in errors
    assert errors[-1]["message"] == "something else went wrong" and len(errors) == 3
    assert doc["changes"] is True and doc["timings"] == {"totalSeconds": 1.5, "fetchSeconds": 0.25}


def test_recreated_maps_to_recreate():
    report = Report(commit=SHA)
    report.add("ns/web", "Deployment/ns/web", output.RECREATED)
    doc = output.pass_document(report, command="sync", dry_run=True, exit_code=1, source={"repo": "r", "ref": None, "path": "."})
    assert doc["counts"]["recreate"] == 1 and doc["changes"] is True
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_suspended_objects_are_counted_listed_and_no_change():
    report = Report(commit=SHA)
    report.add("ns/web", "Application/ns/web", UNCHANGED)
    report.add("ns/web", "Deployment/ns/web", output.SUSPENDED, "not applied: its Application is suspended")
    report.add("ns/web", "Service/ns/web", output.SUSPENDED, "not applied: its Application is suspended")
    doc = output.pass_document(report, command="sync", dry_run=False, exit_code=0,
                               source={"repo": "r", "ref": None, "path": "."})
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["counts"]["suspended"] == 2 and doc["counts"]["unchanged"] == 1 and doc["changes"] is False
    [app] = doc["applications"]
    assert [(o["action"], o["message"], o["diff"]) for o in app["objects"]][1] == (
        "suspended", "not applied: its Application is suspended", None)
    assert output.text(doc).splitlines()[-1] == "sync: in sync (0 create, 0 update, 1 unchanged, 0 prune, 0 failed, " \
                                                "2 suspended)"
    assert "| `ns/web` | Deployment **suspended**, Service **suspended** | 1 |" in output.markdown(doc)
    assert report.summary().splitlines()[-1] == ("sync succeeded: 0 created, 0 configured, 1 unchanged, 0 pruned, "
                                                 "0 failed, 2 suspended")
    assert "  Deployment/ns/web suspended (not applied: its Application is suspended)" in report.summary()
    assert report.ok and not report.changed and report.failed == set()


def test_schema_rejects_a_failed_report_exiting_1():
    doc = output.pass_document(sample_report(), command="diff", dry_run=True, exit_code=1,
                               source={"repo": None, "ref": None, "path": "."})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_markdown_renders_a_table_errors_and_folded_diffs():
    doc = output.pass_document(sample_report(), command="diff", dry_run=True, exit_code=2,
                               source={"repo": None, "ref": None, "path": "."},
                               diffs={"Deployment/ns/web": "-  replicas: 1\n+  replicas: 2\n"})
    md = output.markdown(doc)
    assert md.startswith("### gitops-agent diff: ")
    assert "| Application | Changes | Unchanged |\n|---|---|---|\n" in md
    assert "| `ns/web` | Deployment **update** | 1 |" in md
    assert "<details><summary>Deployment/ns/web (update)</summary>" in md and "```diff\n-  replicas: 1" in md
    assert "- `apps/x.yaml:7: spec.replicas`: must be" in md


def test_text_plan_for_dry_runs():
    doc = output.pass_document(sample_report(), command="sync", dry_run=True, exit_code=2,
                               source={"repo": None, "ref": None, "path": "."})
    text = output.text(doc)
    assert f"commit {SHA}" in text and "  Deployment/ns/web update" in text
    assert text.splitlines()[-1].startswith("dry run, nothing written: failed (1 create, 1 update")


def test_validate_document_validates():
    result = check({"a.yaml": app("a"), "b.yaml": app("B")})
    doc = output.validate_document(result, exit_code=2, source={"repo": None, "ref": None, "path": "."})
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["counts"] == {"files": 2, "applications": 1, "errors": 1}
    assert doc["applications"] == [{"name": "default/a", "file": "a.yaml", "line": 1, "objects": []}]


class Stream:
    def __init__(self, tty):
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize("quiet,out,err,shown", [(False, True, True, True), (True, True, True, False),
                                                  (False, False, True, False), (False, True, False, False)])
def test_progress_only_on_terminals_and_not_quiet(quiet, out, err, shown):
    assert progress.enabled(quiet, Stream(out), Stream(err)) is shown


def test_a_guarded_stream_never_raises_and_remembers_what_it_lost(tmp_path):
    import errno
    import os

    from agent.common import streams

    class Full:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            raise OSError(errno.ENOSPC, "No space left on device")

    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT)
    out = streams.Guarded(Full(), fd, "<stdout>")
    assert out.write("report\n") == 7 and out.lost and out.error.errno == errno.ENOSPC
    out.write("more")  # the descriptor now points at /dev/null: nothing raises again
    os.write(fd, b"x")
    assert (tmp_path / "out").read_bytes() == b""
    os.close(fd)
    closed = streams.Guarded(None, 1, "<stdout>")
    closed.write("")
    assert not closed.lost and not closed.isatty()
    closed.write("x")
    assert closed.lost and closed.error is None
