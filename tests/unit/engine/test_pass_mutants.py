"""Sharp checks of the pass's stage modules: exact strings and values a looser test lets drift
(what may be written to the cluster, what is asked of the API server)."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest

from agent.engine import sync
from agent.source.mirror import Credentials
from tests.unit.engine.passes import NS, World, app_yaml

REPO = "https://git.example/r.git"


def opts(repo: str = REPO, token: str | None = None) -> SimpleNamespace:
    """What ``redacted`` reads of ``Options``."""
    return SimpleNamespace(repo=repo, credentials=Credentials(token=token) if token else None)


def test_the_user_info_of_the_repository_url_is_redacted_wherever_it_appears():
    url = "https://alice:s3cretpw@git.example/r.git"
    text = f"fetch {url} failed: bad s3cretpw for alice"
    assert sync.redacted(text, opts(url)) == "fetch https://***@git.example/r.git failed: bad *** for ***"


@pytest.mark.parametrize("token, expected", [
    ("abc", "token abc refused; xabcdex"),  # shorter than 4: too likely to be any word
    ("abcd", "token *** refused; x***ex"),
    ("abcde", "token *** refused; x***x"),
])
def test_the_token_of_at_least_four_characters_is_redacted(token, expected):
    assert sync.redacted(f"token {token} refused; xabcdex", opts(token=token)) == expected


def test_no_token_no_redaction():
    assert sync.redacted("token abcd", opts()) == "token abcd"
    assert sync.redacted("token abcd", SimpleNamespace(repo=REPO, credentials=Credentials(token=None))) == "token abcd"


def test_a_failed_fetch_asks_the_api_server_only_for_this_sources_applications(tmp_path):
    world = World(tmp_path, source_id="mine")
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    asked = []
    real = world.kube.list

    def spy(group, kind, label_selector=None):
        asked.append((group, kind, label_selector))
        return real(group, kind, label_selector)
    world.kube.list = spy
    shutil.move(str(world.repo.path), str(tmp_path / "away"))
    report = world.sync()
    assert report.fetch_failed and report.notes == ["1 Application marked SourceAvailable=False (FetchFailed)"]
    assert asked == [("heumsi.github.io", "Application", "heumsi.github.io/source=mine")]
    assert world.kube.writes == [("patch_status", f"Application/{NS}/web")]
