"""One valid Application document from Git (``Manifest``) and the DNS-1123 label rule its
name and namespace follow. Pure.

Apart from ``loader`` so that the parse cache (``parsecache``) can rebuild manifests without
importing the loader that uses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_RULE = ("is not a valid DNS-1123 label (lowercase letters, digits and '-', "
               "starting and ending with a letter or digit, at most 63 characters)")


@dataclass(frozen=True, slots=True)  # a pass makes one per object: no __dict__
class Manifest:
    """One valid Application document.

    ``namespace`` is ``metadata.namespace`` or else the default namespace passed to
    ``load``; ``body`` is the whole document as plain JSON-compatible dicts/lists
    (apiVersion, kind, metadata, spec) with ``metadata.namespace`` filled in; ``path``
    is the repo-relative posix path of the file; ``line`` is the 1-based line of the
    document's first key; ``namespace_line`` that of ``metadata.namespace`` (None when the
    namespace is the default: the document has none).
    """

    namespace: str
    name: str
    body: dict
    path: str
    line: int
    namespace_line: int | None = None


def is_dns1123_label(value) -> bool:
    """Kubernetes DNS-1123 label (RFC 1123): lowercase alphanumerics and '-', starting
    and ending with an alphanumeric, 1-63 characters. Used for names and namespaces."""
    return isinstance(value, str) and len(value) <= 63 and bool(_LABEL.fullmatch(value))
