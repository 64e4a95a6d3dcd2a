"""history: the last distinct contents an Application deployed, and the commit that last changed it."""

import hashlib

from agent.engine import history, status

A, B, C = "a" * 40, "b" * 40, "c" * 40


def entry(content, revision, first, last, passes):
    return {"digest": content, "revision": revision, "firstSyncedAt": first, "lastSyncedAt": last, "passes": passes}


def test_digest_is_sha256_of_canonical_json_whatever_the_key_order():
    expected = "sha256:" + hashlib.sha256(b'{"image":"nginx:1","replicas":2}').hexdigest()
    assert history.digest({"replicas": 2, "image": "nginx:1"}) == expected
    assert history.digest({"image": "nginx:1", "replicas": 2}) == expected
    assert history.digest({"image": "é"}) == "sha256:" + hashlib.sha256('{"image":"é"}'.encode()).hexdigest()
    assert history.digest({"replicas": 3}) != history.digest({"replicas": 2})


def test_new_content_goes_in_front_with_its_commit():
    out = history.record([entry("d1", A, "T1", "T1", 2)], "d2", B, "T2")
    assert out == [entry("d2", B, "T2", "T2", 1), entry("d1", A, "T1", "T1", 2)]


def test_the_same_content_moves_its_last_sync_and_count_only():
    out = history.record([entry("d1", A, "T1", "T1", 2)], "d1", B, "T3")
    assert out == [entry("d1", A, "T1", "T3", 3)]


def test_a_rollback_moves_the_older_entry_to_the_front_and_keeps_its_first_commit():
    old = [entry("d2", B, "T2", "T2", 1), entry("d1", A, "T1", "T1", 4)]
    assert history.record(old, "d1", C, "T3") == [entry("d1", A, "T1", "T3", 5), entry("d2", B, "T2", "T2", 1)]


def test_at_most_five_entries_the_oldest_dropped():
    old = [entry(f"d{i}", A, "T", "T", 1) for i in range(5)]
    out = history.record(old, "new", B, "T9")
    assert [e["digest"] for e in out] == ["new", "d0", "d1", "d2", "d3"]
    assert history.LIMIT == 5


def test_entries_without_a_digest_and_bad_counts_are_repaired():
    out = history.record([{"revision": A}, "junk", entry("d1", A, "T1", "T1", "x")], "d1", B, "T2")
    assert out == [entry("d1", A, "T1", "T2", 1)]
    assert history.record([entry("d1", A, "T1", "T1", 0)], "d1", B, "T2")[0]["passes"] == 1
    assert history.record(None, "d1", B, "T2") == [entry("d1", B, "T2", "T2", 1)]


def test_record_does_not_change_the_stored_list():
    old = [entry("d1", A, "T1", "T1", 1)]
    history.record(old, "d1", B, "T2")
    assert old == [entry("d1", A, "T1", "T1", 1)]


def test_changed_commit_moves_only_with_the_content():
    assert history.changed_commit(None, None, "d1", B) == B
    assert history.changed_commit([entry("d1", A, "T", "T", 1)], "x" * 40, "d2", B) == B
    assert history.changed_commit([entry("d1", A, "T", "T", 1)], C, "d1", B) == C
    assert history.changed_commit([entry("d1", A, "T", "T", 1)], None, "d1", B) == A
    assert history.changed_commit([{"digest": "d1"}], None, "d1", B) == B


def test_fields_record_a_sync_from_git():
    out = history.fields({}, {"image": "x"}, A, True, True, "T1")
    content = history.digest({"image": "x"})
    assert out == {"history": [entry(content, A, "T1", "T1", 1)], "lastChangedCommit": A, "lastChangedCommitShort": A[:7]}


def test_fields_keep_the_stored_ones_when_the_pass_did_not_sync():
    old = {"history": [entry("d1", A, "T1", "T1", 1)], "lastChangedCommit": A}
    kept = {"history": old["history"], "lastChangedCommit": A, "lastChangedCommitShort": A[:7]}
    assert history.fields(old, {"image": "y"}, B, False, True, "T2") == kept
    assert history.fields(old, {"image": "y"}, None, True, True, "T2") == kept
    assert history.fields({}, {"image": "y"}, B, False, False, "T2") == {}


def test_fields_without_a_write_leave_the_history_when_the_content_is_the_newest():
    content = history.digest({"image": "x"})
    old = {"history": [entry(content, A, "T1", "T1", 1)], "lastChangedCommit": A}
    assert history.fields(old, {"image": "x"}, B, True, False, "T2")["history"] == old["history"]
    assert history.fields(old, {"image": "x"}, B, True, True, "T2")["history"] == [entry(content, A, "T1", "T2", 2)]


def test_an_upgrade_writes_nothing_until_the_next_commit_or_change():
    """An Application synced by an agent without history gets none on a pass that writes nothing
    else (an upgrade must not write every status); the next commit starts it."""
    assert history.fields({"lastSyncedCommit": A}, {"image": "x"}, A, True, False, "T2") == {}
    out = history.fields({"lastSyncedCommit": A}, {"image": "x"}, B, True, True, "T3")
    assert out["history"][0]["revision"] == B and out["lastChangedCommit"] == B


def test_a_commit_that_leaves_the_spec_moves_the_synced_commit_not_the_changed_one():
    children = {"Deployment": None, "Service": None}
    app = {"metadata": {"name": "web", "generation": 1}, "spec": {"image": "x"}, "status": {}}
    first = status.compute(app, status.Outcome(True, True, A, "Synced", "ok"), children, "T1")
    second = status.compute({**app, "status": first}, status.Outcome(True, False, B, "Synced", "ok"), children, "T2")
    assert (second["lastSyncedCommit"], second["lastChangedCommit"], second["lastChangedCommitShort"]) == (B, A, A[:7])
    assert second["history"] == [entry(history.digest({"image": "x"}), A, "T1", "T2", 2)]
    changed = {**app, "spec": {"image": "y"}, "status": second}
    third = status.compute(changed, status.Outcome(True, True, C, "Synced", "ok"), children, "T3")
    assert third["lastChangedCommit"] == C and [e["revision"] for e in third["history"]] == [C, A]
    again = status.compute({**changed, "status": third}, status.Outcome(True, False, C, "Synced", "ok"), children, "T4")
    assert not status.differs(third, again)
