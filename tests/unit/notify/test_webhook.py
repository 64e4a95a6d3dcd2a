"""webhook: the signature over <t>.<body>, the bodies, and the receiver's check."""

import hashlib
import hmac
import json

from agent.engine.news import Notice
from agent.notify import webhook

N1 = Notice("ns", "web", "Deployed", "info", "deployed commit 2222222 (before: 1111111)", "2" * 40, "1" * 40,
            "apps/web.yaml", "u1")
N2 = Notice("ns", "db", "Degraded", "error", "Degraded: x", "2" * 40, None, None)


def test_sign_is_hmac_sha256_over_t_dot_body():
    want = hmac.new(b"k", b"1700000000.{}", hashlib.sha256).hexdigest()
    assert webhook.sign(b"k", b"{}", 1700000000) == f"t=1700000000,v1={want}"


def test_verify_accepts_its_own_and_refuses_old_wrong_or_tampered():
    header = webhook.sign(b"k", b"body", 1000)
    assert webhook.verify(b"k", b"body", header, now=1000)
    assert webhook.verify(b"k", b"body", header, now=1300)
    assert not webhook.verify(b"k", b"body", header, now=1301)
    assert not webhook.verify(b"k", b"body", header, now=699)
    assert not webhook.verify(b"other", b"body", header, now=1000)
    assert not webhook.verify(b"k", b"bodx", header, now=1000)
    assert not webhook.verify(b"k", b"body", header.replace("t=1000", "t=1001"), now=1000)
    assert not webhook.verify(b"k", b"body", "v1=abc", now=1000)
    assert not webhook.verify(b"k", b"body", "", now=1000)


def test_one_body_per_notice():
    out = webhook.bodies([N1, N2], "src", None, batch=False)
    assert [about for _, about in out] == [[N1], [N2]]
    assert json.loads(out[0][0]) == {
        "kind": "gitops-agent.notification", "source": "src", "application": {"namespace": "ns", "name": "web"},
        "reason": "Deployed", "severity": "info", "message": "deployed commit 2222222 (before: 1111111)",
        "commit": "2" * 40, "previousCommit": "1" * 40, "sourcePath": "apps/web.yaml"}


def test_a_batch_is_one_body():
    [(body, about)] = webhook.bodies([N1, N2], "src", "https://status.example.com/", batch=True)
    doc = json.loads(body)
    assert (doc["kind"], doc["source"], doc["count"], about) == ("gitops-agent.notifications", "src", 2, [N1, N2])
    assert [n["application"]["name"] for n in doc["notifications"]] == ["web", "db"]
    assert doc["notifications"][1]["statusPageUrl"] == "https://status.example.com/"


def test_no_notices_no_body():
    assert webhook.bodies([], "src", None, batch=True) == []
    assert webhook.bodies([], "src", None, batch=False) == []
