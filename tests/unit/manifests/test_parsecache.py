"""Parsing only what changed: the blob-id cache and the C parser's fast path (agent/manifests/parsecache.py,
agent/manifests/loader.py)."""

from __future__ import annotations

import json

import pytest

from agent.manifests import loader as manifests, parsecache

APP = """\
apiVersion: heumsi.github.io/v1
kind: Application
metadata:
  name: {name}
  labels: {{team: a}}
spec:
  image: nginx:1
  replicas: 1
  port: 80
"""
FILES = {
    "a.yaml": APP.format(name="a").encode(),
    "multi.yaml": (APP.format(name="b") + "---\n# nothing\n---\n" + APP.format(name="c")).encode(),
    "bad.yaml": APP.format(name="d").replace("replicas: 1", "replicas: -1").encode(),
}
BLOBS = {"a.yaml": "1" * 40, "multi.yaml": "2" * 40, "bad.yaml": "3" * 40}


def test_the_c_parser_and_the_python_parser_give_the_same_result(monkeypatch):
    assert manifests._FAST, "PyYAML here is built with libyaml"
    fast = manifests.load(FILES, "prod")
    monkeypatch.setattr(manifests, "_FAST", False)
    assert manifests.load(FILES, "prod") == fast
    assert [m.name for m in fast.manifests] == ["a", "b", "c"] and [m.line for m in fast.manifests] == [1, 1, 13]


@pytest.mark.parametrize("text", [
    "a: &x 1\nb: *x\n",  # alias: the Python loader's wording and line
    "a: 1\na: 2\n",  # duplicate key
    "a:\n\t- b\n",  # syntax error
    "[" * 200 + "]" * 200 + "\n",  # too deep
])
def test_files_with_problems_read_as_the_python_loader_reads_them(monkeypatch, text):
    fast = manifests.load({"x.yaml": text.encode()}, "prod")
    monkeypatch.setattr(manifests, "_FAST", False)
    assert manifests.load({"x.yaml": text.encode()}, "prod") == fast and fast.errors


def test_a_cached_file_is_not_parsed_again_and_gives_the_same_result(monkeypatch, tmp_path):
    cache = parsecache.ParseCache(tmp_path / "c.json", "1.0")
    first = manifests.load(FILES, "prod", blobs=BLOBS, cache=cache)
    cache.save()
    parsed = []
    real = manifests._load_file
    monkeypatch.setattr(manifests, "_load_file", lambda path, *a: parsed.append(path) or real(path, *a))
    again = parsecache.ParseCache(tmp_path / "c.json", "1.0")
    assert manifests.load(FILES, "prod", blobs=BLOBS, cache=again) == first
    assert parsed == ["bad.yaml"]  # a file with errors is always parsed (its wording is the parser's)
    changed = {**BLOBS, "a.yaml": "4" * 40}
    manifests.load(FILES, "prod", blobs=changed, cache=again)
    assert parsed == ["bad.yaml", "a.yaml", "bad.yaml"]
    manifests.load(FILES, "other", blobs=BLOBS, cache=again)  # another default namespace: another key
    assert parsed[-3:] == ["a.yaml", "bad.yaml", "multi.yaml"]


def test_without_blob_ids_nothing_is_cached(tmp_path):
    cache = parsecache.ParseCache(tmp_path / "c.json")
    manifests.load(FILES, "prod", cache=cache)
    cache.save()
    assert not (tmp_path / "c.json").exists()


def test_save_keeps_only_what_the_last_pass_used(tmp_path):
    cache = parsecache.ParseCache(tmp_path / "c.json", "v")
    manifests.load(FILES, "prod", blobs=BLOBS, cache=cache)
    cache.save()
    manifests.load({"a.yaml": FILES["a.yaml"]}, "prod", blobs=BLOBS, cache=cache)
    cache.save()
    entries = json.loads((tmp_path / "c.json").read_text())["entries"]
    assert [k.split("\0")[1] for k in entries] == ["a.yaml"]


@pytest.mark.parametrize("content", [
    "not json",
    json.dumps({"format": "something else", "version": "v", "entries": {}}),
    json.dumps({"format": parsecache.FORMAT, "version": "another version", "entries": {"k": []}}),
    json.dumps([1, 2]),
    "\xff\xfe",
])
def test_a_corrupt_or_foreign_cache_file_is_ignored(tmp_path, content):
    (tmp_path / "c.json").write_text(content, encoding="latin-1")
    cache = parsecache.ParseCache(tmp_path / "c.json", "v")
    result = manifests.load(FILES, "prod", blobs=BLOBS, cache=cache)
    assert result == manifests.load(FILES, "prod")


GOOD_BODY = {"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": {"name": "a", "namespace": "p"},
             "spec": {}}


@pytest.mark.parametrize("entry", [
    "x", [[1]], [[0, 1, None, None]], [[3, 2, None, None]], [[1, 2, {"kind": "Application"}, 1]],
    [[1, 9, {**GOOD_BODY, "metadata": {"name": "BAD", "namespace": "p"}}, 4]],
    [[1, 9, {**GOOD_BODY, "extra": 1}, 4]],
    [[True, 9, None, None]],
    [[1, 9, GOOD_BODY]],  # the v1 shape, without the line of metadata.name
    [[1, 9, GOOD_BODY, None]], [[1, 9, GOOD_BODY, 10]], [[2, 9, GOOD_BODY, 1]], [[1, 9, GOOD_BODY, True]],
    [[1, 9, None, 4]],
])
def test_an_entry_of_the_wrong_shape_is_never_trusted(tmp_path, entry):
    key = parsecache.key(BLOBS["a.yaml"], "a.yaml", "prod", 1_048_576, 1000)
    (tmp_path / "c.json").write_text(json.dumps({"format": parsecache.FORMAT, "version": "v", "entries": {key: entry}}))
    cache = parsecache.ParseCache(tmp_path / "c.json", "v")
    assert cache.get(key) is None
    assert manifests.load(FILES, "prod", blobs=BLOBS, cache=cache) == manifests.load(FILES, "prod")


def test_an_entry_is_checked_when_first_read_and_again_after_it_is_replaced(tmp_path):
    """A pass asks for each file twice (the tree walk's ``parsed_before``, then ``load``) and
    ``run`` every pass: a checked entry is not checked again, one ``put`` over it is."""
    key = parsecache.key(BLOBS["a.yaml"], "a.yaml", "prod", 1_048_576, 1000)
    good = [[1, 9, GOOD_BODY, 4, None]]
    (tmp_path / "c.json").write_text(json.dumps({"format": parsecache.FORMAT, "version": "v", "entries": {key: good}}))
    cache = parsecache.ParseCache(tmp_path / "c.json", "v")
    assert cache.get(key) == good and cache.get(key) == good
    cache.put(key, [[1]])
    assert cache.get(key) is None and cache.get(key) is None


def test_a_load_without_errors_rejects_nothing():
    clean = {path: data for path, data in FILES.items() if path != "bad.yaml"}
    assert manifests.load(clean, "prod").rejected == [] and manifests.load(FILES, "prod").rejected != []


def test_an_entry_holds_each_documents_lines_body_and_metadata_name_line(tmp_path):
    cache = parsecache.ParseCache(tmp_path / "c.json", "v")
    manifests.load(FILES, "prod", blobs=BLOBS, cache=cache)
    cache.save()
    assert json.loads((tmp_path / "c.json").read_text())["format"] == "gitops-agent/parsed-manifests/v3"
    entry = cache.get(parsecache.key(BLOBS["multi.yaml"], "multi.yaml", "prod", 1_048_576, 1000))
    assert [(start, end, body and body["metadata"]["name"], line, ns_line)
            for start, end, body, line, ns_line in entry] == [
        (1, 10, "b", 4, None), (12, 12, None, None, None), (13, 22, "c", 16, None)]


def test_the_line_of_metadata_namespace_is_kept_and_restored(tmp_path):
    files = {"n.yaml": APP.format(name="n").replace("  labels:", "  namespace: team-a\n  labels:").encode()}
    cache = parsecache.ParseCache(tmp_path / "c.json", "v")
    parsed = manifests.load(files, "prod", blobs={"n.yaml": "4" * 40}, cache=cache)
    restored = manifests.load(files, "prod", blobs={"n.yaml": "4" * 40}, cache=cache)
    assert [m.namespace_line for m in parsed.manifests] == [5]
    assert restored == parsed
    assert [m.namespace_line for m in manifests.load(FILES, "prod").manifests] == [None, None, None]


def test_an_unwritable_cache_is_only_slower(tmp_path):
    (tmp_path / "dir").write_text("a file where the directory should be")
    cache = parsecache.ParseCache(tmp_path / "dir" / "c.json", "v")
    manifests.load(FILES, "prod", blobs=BLOBS, cache=cache)
    cache.save()  # logged, not raised


def test_beside_names_one_file_per_source_and_reuses_it(tmp_path):
    one = parsecache.beside(tmp_path / "abc.git", "src-1")
    assert one.file == tmp_path / "abc.git.src-1.parsed.json"
    assert parsecache.beside(tmp_path / "abc.git", "src-1") is one
    assert parsecache.beside(tmp_path / "abc.git", "src-2") is not one


def test_a_process_restores_each_entry_once_and_every_pass_gets_its_own_rows(monkeypatch):
    cache = parsecache.ParseCache()
    dup = {"x.yaml": APP.format(name="a").encode(), "y.yaml": APP.format(name="a").encode()}
    blobs = {"x.yaml": "5" * 40, "y.yaml": "6" * 40}
    manifests.load(dup, "prod", blobs=blobs, cache=cache)  # parsed and cached: each file is clean
    restored = []
    real = parsecache.restore
    monkeypatch.setattr(parsecache, "restore", lambda path, *a: restored.append(path) or real(path, *a))
    second = manifests.load(dup, "prod", blobs=blobs, cache=cache)
    third = manifests.load(dup, "prod", blobs=blobs, cache=cache)
    assert restored == ["x.yaml", "y.yaml"]  # once per entry, not once per pass
    assert second == third and len(third.errors) == 2 and [len(r.reasons) for r in third.rejected] == [1, 1]
    cache.put(parsecache.key("5" * 40, "x.yaml", "prod", manifests.MAX_FILE_BYTES, manifests.MAX_DOCUMENTS),
              [[1, 9, {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
                       "metadata": {"name": "b", "namespace": "prod"}, "spec": {}}, 4, None]])
    assert [m.name for m in manifests.load(dup, "prod", blobs=blobs, cache=cache).manifests] == ["a", "b"]
    cache.save()
    manifests.load({"x.yaml": dup["x.yaml"]}, "prod", blobs=blobs, cache=cache)
    cache.save()  # y.yaml unused: its restored items go with its entry
    assert [k.split("\0")[1] for k in cache._restored] == ["x.yaml"]


# -- load_changed: a pushed commit loaded from the files it changed (issue 33) -------------------

CLEAN = {"a.yaml": APP.format(name="a").encode(), "multi.yaml": FILES["multi.yaml"]}


@pytest.mark.parametrize("change", ["modify", "add", "remove", "rename", "broken", "duplicate-inside", "nothing"])
def test_load_changed_gives_what_a_full_load_gives(change):
    before = manifests.load(CLEAN, "prod")
    files, gone = {
        "modify": ({"a.yaml": APP.format(name="a").replace("nginx:1", "nginx:2").encode()}, set()),
        "add": ({"z.yaml": APP.format(name="z").encode(), "0.yaml": APP.format(name="0").encode()}, set()),
        "remove": ({}, {"multi.yaml"}),
        "rename": ({"moved.yaml": CLEAN["a.yaml"]}, {"a.yaml"}),
        "broken": ({"a.yaml": FILES["bad.yaml"]}, set()),
        "duplicate-inside": ({"x.yaml": APP.format(name="x").encode(), "y.yaml": APP.format(name="x").encode()},
                             set()),
        "nothing": ({}, set()),
    }[change]
    after = {p: data for p, data in {**CLEAN, **files}.items() if p not in gone}
    changed = manifests.load_changed(before, files, gone, "prod")
    assert changed == manifests.load(after, "prod")
    assert [m.name for m in changed.manifests] == sorted(m.name for m in changed.manifests)


@pytest.mark.parametrize("files", [
    {"x.yaml": APP.format(name="a").encode()},  # a second "a", in a changed file: both refused
    {"x.yaml": APP.format(name="b").replace("replicas: 1", "replicas: -1").encode()},  # an invalid second "b"
])
def test_load_changed_leaves_a_duplicate_with_an_unchanged_file_to_a_full_load(files):
    before = manifests.load(CLEAN, "prod")
    assert manifests.load_changed(before, files, set(), "prod") is None
    assert len(manifests.load({**CLEAN, **files}, "prod").errors) >= 2


def test_load_changed_needs_a_clean_load_before():
    before = manifests.load({**CLEAN, "bad.yaml": FILES["bad.yaml"]}, "prod")
    assert manifests.load_changed(before, {"z.yaml": APP.format(name="z").encode()}, set(), "prod") is None
    clean = manifests.load(CLEAN, "prod")
    assert manifests.load_changed(clean, {}, {"a.yaml"}, "other").manifests == clean.manifests[1:]


def test_load_changed_uses_the_parse_cache_and_its_limits(tmp_path):
    cache = parsecache.ParseCache()
    before = manifests.load(CLEAN, "prod")
    files = {"z.yaml": APP.format(name="z").encode()}
    manifests.load_changed(before, files, set(), "prod", blobs={"z.yaml": "7" * 40}, cache=cache)
    assert cache.get(parsecache.key("7" * 40, "z.yaml", "prod", manifests.MAX_FILE_BYTES, manifests.MAX_DOCUMENTS))
    small = manifests.load_changed(before, files, set(), "prod", max_file_bytes=10)
    assert [str(e) for e in small.errors] == [f"z.yaml: file is {len(files['z.yaml'])} bytes, above the limit of 10 bytes"]
    many = {"z.yaml": APP.format(name="z").encode() + b"---\n" + APP.format(name="y").encode()}
    one = {"a.yaml": CLEAN["a.yaml"]}
    before = manifests.load(one, "prod", max_documents=1)
    assert manifests.load_changed(before, many, set(), "prod", max_documents=1) == manifests.load(
        {**one, **many}, "prod", max_documents=1)
    assert manifests.load_changed(before, many, set(), "prod", max_documents=1).errors


# -- a full disk (issue 42) -------------------------------------------------------------------------

@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs at ``tmp_path/disk``: a disk that fills up for real. Skipped where mounting
    is not allowed (not root, no CAP_SYS_ADMIN, no tmpfs)."""
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_a_full_disk_leaves_no_temporary_file_and_says_what_it_could_not_write(tiny_disk):
    """The temporary file that filled the last free space was left for ever and ``save`` said
    nothing; now it is removed, ``save`` says what it could not write, and once there is room
    again the next save writes the file."""
    cache = parsecache.ParseCache(tiny_disk / "mirror.git.src.parsed.json", "v")
    for i in range(200):  # about 200 KB of JSON on a 64 KiB disk
        cache.put(f"key-{i}", [[1, 2, {"x": "y" * 1000}, None]])
    said = cache.save()
    assert said and "could not write the parse cache" in said and str(tiny_disk) in said
    assert "No space left on device" in said
    assert list(tiny_disk.iterdir()) == []  # neither the file nor its temporary file
    cache.forget([f"key-{i}" for i in range(10, 200)])  # room again: the entries left are written
    assert cache.save(prune=False) is None
    assert [p.name for p in tiny_disk.iterdir()] == ["mirror.git.src.parsed.json"]


def test_a_save_that_fails_leaves_no_temporary_file(tmp_path):
    file = tmp_path / "mirror.git.src.parsed.json"
    file.mkdir()  # the rename over it fails
    cache = parsecache.ParseCache(file, "v")
    cache.put("key", [[1, 2, None, None]])
    said = cache.save()
    assert said and "could not write the parse cache" in said
    assert [p.name for p in tmp_path.iterdir()] == [file.name]


def test_the_file_is_the_compact_json_of_every_entry_written_one_at_a_time(tmp_path):
    """The file written entry by entry is byte for byte the one-string JSON it replaced (non-ASCII
    escaped, NUL-separated keys), and an empty cache is an empty object of entries."""
    cache = parsecache.ParseCache(tmp_path / "c.json", "v\u00e9")
    files = {**FILES, "\u00fc.yaml": "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata:\n  name: u\n"
                                      "spec:\n  image: nginx\n  env: {GREETING: \"gr\u00fc\u00df \U0001f680\"}\n".encode()}
    manifests.load(files, "prod", blobs={**BLOBS, "\u00fc.yaml": "5" * 40}, cache=cache)
    cache.save()
    want = json.dumps({"format": parsecache.FORMAT, "version": "v\u00e9", "entries": cache._entries},
                      separators=(",", ":"))
    assert (tmp_path / "c.json").read_text(encoding="utf-8") == want and len(cache._entries) >= 3
    empty = parsecache.ParseCache(tmp_path / "e.json", "v")
    empty._dirty = True
    empty.save()
    assert json.loads((tmp_path / "e.json").read_text()) == {"format": parsecache.FORMAT, "version": "v", "entries": {}}
