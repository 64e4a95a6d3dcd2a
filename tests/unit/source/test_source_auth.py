"""agent.source: Git's words for an HTTP 401 or 403 read as what they mean, never with a secret."""

from __future__ import annotations

import pytest

from agent.source import mirror as source

TOKEN = source.Credentials(token="secret-token-0054", username="deploy")


@pytest.mark.parametrize("detail, credentials, expected", [
    ("fatal: could not read Username for 'https://git.example': terminal prompts disabled", TOKEN,
     "the server refused the credentials (HTTP 401)"),
    ("fatal: could not read Password for 'https://deploy@git.example': terminal prompts disabled", TOKEN,
     "the server refused the credentials (HTTP 401)"),
    ("remote: Invalid username or password.; fatal: Authentication failed for 'https://git.example/a.git/'", TOKEN,
     "the server refused the credentials (HTTP 401)"),
    ("fatal: unable to access 'https://git.example/a.git/': The requested URL returned error: 403", TOKEN,
     "the server refused the credentials (HTTP 403)"),
    ("fatal: could not read Username for 'https://git.example': terminal prompts disabled", None,
     "the server asks for credentials (HTTP 401) and none were sent"),
    ("fatal: unable to access 'https://git.example/a.git/': The requested URL returned error: 403",
     source.Credentials(), "the server asks for credentials (HTTP 403) and none were sent"),
])
def test_an_authentication_failure_says_what_the_server_refused(detail, credentials, expected):
    said = source._refused(detail, credentials)
    assert said.startswith(expected)
    assert "secret-token" not in said and "deploy" not in said


@pytest.mark.parametrize("detail", ["fatal: couldn't find remote ref main",
                                    "fatal: unable to access 'https://x/': The requested URL returned error: 404",
                                    "fatal: unable to access 'https://x/': Could not resolve host: x"])
def test_other_failures_are_not_taken_for_authentication(detail):
    assert source._refused(detail, TOKEN) is None
