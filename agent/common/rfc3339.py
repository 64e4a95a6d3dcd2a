"""RFC 3339 timestamps as Kubernetes writes them (``metav1.Time``: ``2026-12-01T10:00:00Z``)."""

from __future__ import annotations

import datetime


def parse(text) -> datetime.datetime | None:
    """An RFC 3339 timestamp (``Z`` or an offset, fractions allowed) as an aware datetime; None
    when ``text`` is missing, not a string, or not such a timestamp (a garbled status field is
    treated as absent, never as an error)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
