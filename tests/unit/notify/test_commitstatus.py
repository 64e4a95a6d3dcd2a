"""commitstatus: the verdict of a pass, the hosts' requests, repository from --repo."""

import json

import pytest

from agent.engine.report import Report
from agent.notify import commitstatus as cs

SHA = "a" * 40


def report(readiness=None, failed=(), errors=(), invalid=(), commit=SHA):
    r = Report(commit=commit)
    r.readiness = dict(readiness or {})
    for key in failed:
        r.add(key, f"Application/{key}", "failed", "boom")
    r.errors += list(errors)
    r.invalid += list(invalid)
    return r


def test_success_when_all_ready():
    assert cs.verdict(report({"ns/a": ("True", "Healthy"), "ns/b": ("True", "Healthy")})) == (
        "success", "2 Applications synced and ready")
    assert cs.verdict(report({"ns/a": ("True", "Healthy")})) == ("success", "1 Application synced and ready")


def test_suspended_and_kept_count_as_done():
    assert cs.verdict(report({"ns/a": ("True", "Healthy"), "ns/s": ("False", "Suspended"),
                              "ns/k": ("False", "PruneSkipped"), "ns/b": ("False", "PruneBlocked")}))[0] == "success"


def test_pending_while_rolling_out():
    assert cs.verdict(report({"ns/a": ("True", "Healthy"), "ns/b": ("False", "Progressing")})) == (
        "pending", cs.PENDING_TEXT)


def test_failure_names_how_many_and_the_first_few():
    ready = {f"ns/app-{i}": ("False", "SyncFailed") for i in range(5)} | {"ns/ok": ("True", "Healthy")}
    state, text = cs.verdict(report(ready, failed=[f"ns/app-{i}" for i in range(5)]))
    assert (state, text) == ("failure", "5 of 6 Applications failed: ns/app-0, ns/app-1, ns/app-2 and 2 more")


def test_a_failed_task_is_a_failure_and_a_running_one_pending():
    assert cs.verdict(report({"ns/a": ("False", "TaskFailed"), "ns/b": ("True", "Healthy")})) == (
        "failure", "1 of 2 Applications failed: ns/a")
    assert cs.verdict(report({"ns/a": ("False", "TaskRunning")})) == ("pending", cs.PENDING_TEXT)


def test_degraded_is_a_failure():
    assert cs.verdict(report({"ns/a": ("False", "Degraded"), "ns/b": ("True", "Healthy")})) == (
        "failure", "1 of 2 Applications failed: ns/a")


def test_a_degraded_one_names_its_reason():
    r = report({"ns/a": ("False", "Degraded"), "ns/b": ("False", "Degraded"), "ns/c": ("True", "Healthy")})
    r.health = {"ns/b": {"status": "Degraded", "message": "Deployment: ImagePullBackOff: container b: back-off"}}
    assert cs.verdict(r) == ("failure", "2 of 3 Applications failed: ns/a, ns/b; ns/b: Deployment: ImagePullBackOff: "
                                        "container b: back-off")
    r = report({"ns/b": ("False", "Degraded")})
    r.health = {"ns/b": {"status": "Degraded", "message": "Deployment: CrashLoopBackOff: " + "x" * 200}}
    state, text = cs.verdict(r)
    assert text.startswith("1 of 1 Application failed: ns/b: Deployment: CrashLoopBackOff: x") and len(text) == 140


def test_one_of_one():
    assert cs.verdict(report({"ns/a": ("False", "Stalled")})) == ("failure", "1 of 1 Application failed: ns/a")


def test_description_is_at_most_140_characters():
    names = [f"team-{i}/" + "x" * 60 for i in range(3)]
    state, text = cs.verdict(report({n: ("False", "SyncFailed") for n in names}, failed=names))
    assert len(text) == 140 and text.endswith("...") and text.startswith("3 of 3 Applications failed: team-0/")


def test_failed_files_and_other_errors():
    assert cs.verdict(report({}, invalid=[("a.yaml:1", "bad"), ("b.yaml", "bad")], errors=["x"])) == (
        "failure", "2 files failed: a.yaml, b.yaml")
    assert cs.verdict(report({}, invalid=[("a.yaml:1", "bad")], errors=["x"])) == ("failure", "1 file failed: a.yaml")
    assert cs.verdict(report({"ns/a": ("True", "Healthy")}, errors=["too many prunes"])) == (
        "failure", "the sync failed; the agent's log and the Applications' status say why")


def test_no_commit_nothing_to_post():
    assert cs.verdict(report({}, commit=None)) is None


def test_no_applications_is_success():
    assert cs.verdict(report({})) == ("success", "0 Applications synced and ready")


@pytest.mark.parametrize("kind, repo, want", [
    ("github", "https://github.com/team/apps.git", ("https://api.github.com", "team/apps")),
    ("github", "git@github.com:team/apps.git", ("https://api.github.com", "team/apps")),
    ("github", "ssh://git@GHE.example.com:2222/team/apps", ("https://ghe.example.com/api/v3", "team/apps")),
    ("github", "https://github.com/team/sub/apps", ("https://api.github.com", None)),
    ("gitlab", "https://gitlab.com/group/sub/apps.git", ("https://gitlab.com/api/v4", "group/sub/apps")),
    ("gitea", "https://git.example.com/team/apps/", ("https://git.example.com/api/v1", "team/apps")),
    ("gitea", "/srv/repos/apps", (None, None)),
    ("github", "file:///srv/apps", (None, None)),
    ("github", "https://github.com/", (None, None)),
    # repository.remote reads every URL form Git accepts
    ("github", "github.com:team/apps", ("https://api.github.com", "team/apps")),
    ("gitea", "git+ssh://git@git.example.com/team/apps.git", ("https://git.example.com/api/v1", "team/apps")),
    ("gitlab", "https://[2001:db8::1]:8443/group/apps", ("https://[2001:db8::1]/api/v4", "group/apps")),
])
def test_from_repo(kind, repo, want):
    assert cs.from_repo(kind, repo) == want


def test_request_shapes_per_host():
    gh = cs.GitHub("https://api.github.com/", "team/apps", "t0k")
    assert gh.post_url(SHA) == f"https://api.github.com/repos/team/apps/statuses/{SHA}"
    assert gh.list_url(SHA) == f"https://api.github.com/repos/team/apps/commits/{SHA}/statuses"
    assert gh.body("failure", "d", "ctx", "https://s/") == {"state": "failure", "description": "d", "context": "ctx",
                                                             "target_url": "https://s/"}
    assert gh.headers()["Authorization"] == "Bearer t0k"
    gl = cs.GitLab("https://gitlab.com/api/v4", "group/sub/apps", "t0k")
    assert gl.post_url(SHA) == f"https://gitlab.com/api/v4/projects/group%2Fsub%2Fapps/statuses/{SHA}"
    assert gl.list_url(SHA) == f"https://gitlab.com/api/v4/projects/group%2Fsub%2Fapps/repository/commits/{SHA}/statuses"
    assert gl.body("pending", "d", "ctx", None) == {"state": "running", "description": "d", "name": "ctx"}
    assert gl.body("failure", "d", "ctx", None)["state"] == "failed"
    assert gl.headers() == {"PRIVATE-TOKEN": "t0k"}
    gt = cs.Gitea("https://git.example.com/api/v1", "team/apps", "t0k")
    assert gt.post_url(SHA) == f"https://git.example.com/api/v1/repos/team/apps/statuses/{SHA}"
    assert gt.headers() == {"Authorization": "token t0k"}


def test_existing_reads_the_newest_of_our_context():
    gh = cs.GitHub("u", "r", "t")
    items = [{"state": "success", "context": "other", "description": "x"},
             {"state": "failure", "context": "ctx", "description": "2 failed"},
             {"state": "pending", "context": "ctx", "description": "p"}]
    assert gh.existing(items, "ctx") == ("failure", "2 failed")
    assert gh.existing(items, "none") is None
    assert gh.existing({"message": "x"}, "ctx") is None
    gl = cs.GitLab("u", "r", "t")
    assert gl.existing([{"status": "running", "name": "ctx", "description": None}], "ctx") == ("pending", "")
    gt = cs.Gitea("u", "r", "t")
    assert gt.existing([{"status": "success", "context": "ctx", "description": "ok"}], "ctx") == ("success", "ok")


class _Host(cs.GitHub):
    """Records posts; ``found`` is what the host has for every commit."""

    def __init__(self, found=None):
        super().__init__("u", "r", "t")
        self.found, self.posts, self.reads = found, [], 0

    def read(self, sha, context, timeout):
        self.reads += 1
        return self.found

    def post(self, sha, state, description, context, target_url, timeout):
        self.posts.append((sha, state, description))


def test_poster_posts_each_state_once_and_no_pending_after_another():
    host = _Host()
    poster = cs.Poster(host, "ctx", None)
    assert poster.post(SHA, "pending", "p", 1) is True
    assert poster.post(SHA, "pending", "p", 1) is False
    assert poster.post(SHA, "success", "ok", 1) is True
    assert poster.post(SHA, "success", "ok", 1) is False
    assert poster.post(SHA, "pending", "p", 1) is False
    assert poster.post(SHA, "failure", "1 failed", 1) is True
    assert poster.post(SHA, "success", "ok", 1) is True
    assert (host.posts, host.reads) == ([(SHA, "pending", "p"), (SHA, "success", "ok"), (SHA, "failure", "1 failed"),
                                         (SHA, "success", "ok")], 1)


def test_poster_after_a_restart_reads_the_host_first():
    host = _Host(found=("success", "ok"))
    poster = cs.Poster(host, "ctx", None)
    assert poster.wanted(SHA, "pending", "p") is True  # unknown until read
    assert poster.post(SHA, "pending", "p", 1) is False
    assert poster.post(SHA, "success", "ok", 1) is False
    assert poster.post(SHA, "failure", "x", 1) is True
    assert host.posts == [(SHA, "failure", "x")]


# issue 45 item 3: each outcome on the commit it is about
BAD, LATER, GOOD = "b" * 40, "c" * 40, "d" * 40


def attributed(readiness, attributed, commit=LATER, health=None, failed=()):
    r = report(readiness, failed=failed, commit=commit)
    r.attributed = dict(attributed)
    r.health = dict(health or {})
    return r


def posts(r, open_commits=()):
    return [(p.sha, p.state, p.description, p.over_pending) for p in cs.verdicts(r, open_commits)]


def test_a_rollout_that_fails_at_a_later_commit_fails_the_commit_that_caused_it():
    r = attributed({"ns/web": ("False", "Degraded"), "ns/api": ("True", "Healthy")}, {"ns/web": BAD, "ns/api": LATER},
                   health={"ns/web": {"status": "Degraded", "message": "Deployment: ImagePullBackOff: x"}})
    assert posts(r, [BAD]) == [(LATER, "success", "1 Application synced and ready", False),
                               (BAD, "failure", "1 of 1 Application failed: ns/web: Deployment: ImagePullBackOff: x",
                                False)]
    # the bad commit is not looked at when nothing names it: the later commit is still not failed
    assert posts(r) == [(LATER, "success", "1 Application synced and ready", False)]


def test_a_commit_that_changed_no_application_succeeds_whatever_older_rollouts_do():
    r = attributed({"ns/web": ("False", "Progressing")}, {"ns/web": BAD})
    assert posts(r, [BAD]) == [(LATER, "success", "no Application changed at this commit (1 synced; a rollout's "
                                                  "status is on the commit that changed it)", False)]
    assert cs.verdict(report({}, commit=LATER)) == ("success", "0 Applications synced and ready")


def test_the_pass_own_failures_are_the_pass_commits():
    """An apply that failed, a broken file or a failed pass is the commit the pass was at."""
    r = attributed({"ns/web": ("True", "Healthy"), "ns/api": ("False", "SyncFailed")}, {"ns/web": BAD,
                                                                                       "ns/api": LATER},
                   failed=["ns/api"])
    assert posts(r, [BAD]) == [(LATER, "failure", "1 of 1 Application failed: ns/api", False),
                               (BAD, "success", "1 Application synced and ready", False)]
    r = attributed({"ns/web": ("True", "Healthy")}, {"ns/web": BAD})
    r.invalid.append(("x.yaml:1", "bad"))
    assert posts(r, [BAD]) == [(LATER, "failure", "1 file failed: x.yaml", False),
                               (BAD, "success", "1 Application synced and ready", False)]


def test_a_superseded_commit_gets_success_over_its_pending():
    r = attributed({"ns/web": ("False", "Progressing")}, {"ns/web": LATER})
    assert posts(r, [GOOD, LATER, GOOD]) == [
        (LATER, "pending", cs.PENDING_TEXT, False),
        (GOOD, "success", "superseded by cccccccccccc before its rollout was decided", True)]


def test_an_older_commit_still_rolling_out_posts_nothing_new():
    r = attributed({"ns/web": ("False", "Progressing")}, {"ns/web": BAD})
    assert [p[0] for p in posts(r, [BAD])] == [LATER]
    assert posts(attributed({}, {}, commit=None), [BAD]) == []


def test_poster_over_pending_only_replaces_a_pending():
    host = _Host(found=("pending", "p"))
    poster = cs.Poster(host, "ctx", None)
    assert poster.post(SHA, "success", "superseded", 1, over_pending=True) is True
    assert poster.post(SHA, "failure", "x", 1, over_pending=True) is False  # no pending any more
    for found in (None, ("failure", "1 failed")):
        other = _Host(found=found)
        assert cs.Poster(other, "ctx", None).post(SHA, "success", "superseded", 1, over_pending=True) is False
        assert other.posts == []
    assert host.posts == [(SHA, "success", "superseded")]
