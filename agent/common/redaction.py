"""Every form in which a secret can come back in text: what redaction removes. Pure.

Why more than the secret itself (issue 42): a Git token goes out as HTTP Basic authentication,
``Authorization: Basic base64(user:token)``, and a server that echoes the request in an error
body (``remote: ...`` lines of Git's output) hands back that base64 form, which a plain search
for the token never finds; a token written in a URL comes back percent-encoded. So a secret is
removed as written, percent-encoded (RFC 3986 ``quote``, and ``quote_plus`` as forms encode
it), base64 alone and base64 of ``user:secret`` (RFC 7617) for the user names it is sent with
and the ones hosting services use for tokens (``BASIC_USERS``), in the standard and the
URL-safe alphabets (RFC 4648), with and without padding.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Iterable

MASK = "***"
MIN_SECRET = 4
"""Characters a secret must have to be searched for: a shorter one would mask ordinary words."""
BASIC_USERS = ("", "git", "x-access-token", "oauth2", "x-token-auth", "token", "private-token")
"""User names sent with a token in Basic authentication: none (``:token``), this agent's default
(``git``), GitHub's app tokens, GitLab's OAuth and Bitbucket's, and two common others."""


def forms(secret: str, users: Iterable[str] = ()) -> list[str]:
    """Every string ``secret`` may appear as (see the module docstring), longest first (so a
    longer form is masked before a shorter one inside it); ``users``: the user names it is sent
    with besides ``BASIC_USERS``. Empty for a secret shorter than ``MIN_SECRET``."""
    if not secret or len(secret) < MIN_SECRET:
        return []
    found = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret, safe="")}
    plain = [secret.encode()] + [f"{user}:{secret}".encode() for user in {*BASIC_USERS, *users}]
    for raw in plain:
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(raw).decode()
            found |= {text, text.rstrip("=")}
    return sorted((f for f in found if len(f) >= MIN_SECRET), key=lambda f: (-len(f), f))


def scrub(text: str, secrets: Iterable[str], users: Iterable[str] = ()) -> str:
    """``text`` with every form (``forms``) of each of ``secrets`` replaced by ``***``."""
    users = tuple(users)
    every = sorted({f for secret in secrets if secret for f in forms(secret, users)}, key=lambda f: (-len(f), f))
    for form in every:
        if form in text:
            text = text.replace(form, MASK)
    return text
