"""What ``run``'s next pass may take from the previous one (``steady``)."""

from agent.engine.steady import Entry, Steady

CHILD = ("apps", "Deployment", "ns", "web")


def entry(**changes) -> Entry:
    values = dict(document=("apps/web.yaml", 1, "b" * 40), version="7", children=((CHILD, "5"),), commit="c1",
                  source_seen=True, lines=("Deployment/ns/web",), health={"status": "Healthy"},
                  readiness=("True", "Synced"), synced=None)
    values.update(changes)
    return Entry(**values)


def app(rv: str = "7") -> dict:
    return {"kind": "Application", "metadata": {"namespace": "ns", "name": "web", "resourceVersion": rv}}


def test_an_application_is_unchanged_only_when_document_object_and_children_are_as_left():
    steady = Steady(entries={"ns/web": entry()})
    same = (("apps/web.yaml", 1, "b" * 40), app(), ((CHILD, "5"),))
    assert steady.unchanged("ns/web", *same) == entry()
    assert steady.unchanged("ns/other", *same) is None
    assert steady.unchanged("ns/web", ("apps/web.yaml", 1, "c" * 40), app(), same[2]) is None  # new blob
    assert steady.unchanged("ns/web", ("apps/moved.yaml", 1, "b" * 40), app(), same[2]) is None
    assert steady.unchanged("ns/web", ("apps/web.yaml", 2, "b" * 40), app(), same[2]) is None
    assert steady.unchanged("ns/web", same[0], app("8"), same[2]) is None  # the Application was written
    assert steady.unchanged("ns/web", same[0], app(), ((CHILD, "6"),)) is None  # a child was written
    assert steady.unchanged("ns/web", same[0], app(), ()) is None  # a child is gone
    assert steady.unchanged("ns/web", same[0], app(), ((CHILD, "5"), (("", "Service", "ns", "web"), "3"))) is None
    assert steady.unchanged("ns/web", same[0], {"metadata": {}}, same[2]) is None


def test_a_status_is_settled_at_the_same_commit_and_when_git_is_seen_as_then():
    assert Steady.settled(entry(), "c1", True)
    assert Steady.settled(entry(), "c1", False)  # an offline pass after an online one: nothing to say
    assert not Steady.settled(entry(), "c2", True)  # a new commit: the sweep writes it
    assert not Steady.settled(entry(source_seen=False), "c1", True)  # Git seen again: SourceAvailable may move
    assert Steady.settled(entry(source_seen=False), "c1", False)
    assert not Steady.settled(None, "c1", True)


def test_the_version_after_a_pass_is_the_callers_or_none():
    child = {"kind": "Deployment", "metadata": {"namespace": "ns", "name": "web", "resourceVersion": "5"}}
    asked = []

    def versions(kind, namespace, name, read):
        asked.append((kind, namespace, name, read))
        return "9"

    assert Steady().after(child) is None
    assert Steady(versions=versions).after(child) == "9" and asked == [("Deployment", "ns", "web", "5")]
    assert Steady(versions=versions).after({"metadata": {"name": "x"}}) == "9" and asked[-1] == ("", "", "x", None)


def test_a_fact_is_derived_once_per_object_while_the_store_hands_out_that_object():
    steady, derived = Steady(), []
    first, second = {"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}

    def derive(obj):
        derived.append(obj["metadata"]["name"])
        return obj["metadata"]["name"].upper()
    assert [steady.fact(o, derive) for o in (first, second, first, first)] == ["A", "B", "A", "A"]
    assert derived == ["a", "b"]  # asked three times in one pass: derived once
    steady.turn()
    replaced = {"metadata": {"name": "a"}}  # a watch event replaced the object: derived again
    assert [steady.fact(o, derive) for o in (first, replaced, replaced)] == ["A", "A", "A"]
    assert derived == ["a", "b", "a"]
    steady.turn()
    assert steady.fact(second, derive) == "B" and derived == ["a", "b", "a", "b"]  # not read last pass: forgotten


def test_the_facts_of_objects_the_pass_wrote_are_not_kept():
    written = {"a": "9"}  # name -> the resourceVersion the pass's write returned

    def versions(kind, namespace, name, read):
        return str(max(int(read), int(written.get(name, 0))))
    steady, derived = Steady(versions=versions), []
    a, b = ({"kind": "Application", "metadata": {"name": n, "resourceVersion": "5"}} for n in "ab")

    def derive(obj):
        derived.append(obj["metadata"]["name"])
        return obj["metadata"]["name"]
    steady.fact(a, derive), steady.fact(b, derive)
    steady.turn()
    assert [id(v[0]) for v in steady.facts.values()] == [id(b)]  # ``a`` was written: its old object let go
    steady.fact(a, derive), steady.fact(b, derive)
    assert derived == ["a", "b", "a"]


def test_a_release_forgets_at_once_the_facts_of_the_objects_the_pass_wrote_wherever_held():
    """``release``: a status sweep lets go of each Application it wrote as it goes, so the
    watches' replacements are not alive beside all of them at its end (issue 48)."""
    written: dict[str, str] = {}

    def versions(kind, namespace, name, read):
        return str(max(int(read), int(written.get(name, 0))))
    steady = Steady(versions=versions)
    a, b, c = ({"kind": "Application", "metadata": {"name": n, "resourceVersion": "5"}} for n in "abc")
    steady.fact(a, str), steady.fact(b, str)
    steady.turn()
    steady.warm([a, b, c], str, lambda: False)
    steady.fact(a, str), steady.fact(b, str)
    written["a"] = "9"  # the sweep wrote ``a``'s status
    other = {"kind": "Application", "metadata": {"name": "a", "resourceVersion": "5"}}  # equal, not the same
    steady.release([other])
    assert id(a) in steady._next and id(a) in steady.facts and id(a) in steady._ahead
    steady.release([a, b, c])
    for held in (steady._next, steady.facts, steady._ahead):
        assert id(a) not in held and id(b) in held  # ``b`` and ``c`` were not written: kept
    assert id(c) in steady._ahead
    Steady().release([a])  # no versions: nothing can be told, nothing forgotten


def test_a_fact_kept_across_passes_is_the_same_pair_not_a_copy():
    """The next pass keeps the last pass's (object, fact) pair itself: one per live object."""
    steady, obj = Steady(), {"metadata": {"name": "a"}}
    steady.fact(obj, lambda o: ("fact",))
    steady.turn()
    (pair,) = steady.facts.values()
    steady.fact(obj, lambda o: ("derived again",))
    steady.turn()
    assert next(iter(steady.facts.values())) is pair and pair[1] == ("fact",)


def test_a_warm_up_between_passes_derives_what_the_next_pass_asks_and_keeps_no_replaced_object():
    """``warm``: a status sweep replaced every Application; the next push's pass should not derive
    10,000 facts on its way to its apply (issue 48)."""
    steady, derived = Steady(), []

    def derive(obj):
        derived.append(obj["metadata"]["name"])
        return obj["metadata"]["name"].upper()
    kept, swept = {"metadata": {"name": "kept"}}, {"metadata": {"name": "swept"}}
    steady.fact(kept, derive)
    steady.turn()
    assert steady.warm([kept, swept], derive, lambda: False) == 2
    assert derived == ["kept", "swept"]  # the last pass's fact of ``kept`` is taken, not derived again
    assert [steady.fact(o, derive) for o in (kept, swept)] == ["KEPT", "SWEPT"] and len(derived) == 2
    replaced = {"metadata": {"name": "swept"}}  # the watches replaced it again before the pass
    pair = steady._ahead[id(kept)]
    assert steady.warm([kept, replaced], derive, lambda: False) == 2
    assert steady._ahead[id(kept)] is pair  # an earlier warm-up's pair itself
    assert [v[0] for v in steady._ahead.values()] == [kept, replaced]  # ``swept`` is not kept alive
    assert derived == ["kept", "swept", "swept"]


def test_a_warm_up_stops_when_a_pass_is_wanted():
    steady, asked = Steady(), []
    objs = [{"metadata": {"name": str(i)}} for i in range(10)]

    def wanted():
        asked.append(1)
        return True
    assert steady.warm(objs, lambda o: 1, wanted, batch=4) == 3  # asked before the 4th: the pass derives the rest
    assert len(asked) == 1 and len(steady._ahead) == 3
    assert steady.warm(objs, lambda o: 1, lambda: False, batch=4) == 10 and len(steady._ahead) == 10
    assert steady.warm([], lambda o: 1, wanted) == 0 and steady._ahead == {}


def test_a_pass_keeps_only_the_warmed_facts_it_asked_for():
    """A warmed object the watches replaced or deleted before the pass is not kept alive by it."""
    steady = Steady()
    asked, gone = {"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}
    steady.warm([asked, gone], lambda o: o["metadata"]["name"], lambda: False)
    assert steady.fact(asked, lambda o: "derived again") == "a"
    steady.turn()
    assert [v[0] for v in steady.facts.values()] == [asked] and steady._ahead == {} and steady._next == {}
