"""Read a Kubernetes list response item by item, as it arrives.

Why a module of its own: a list of 10,000 Deployments is about 35 MB of JSON and 150 MB once
parsed whole, while a pass keeps each item in about 2.7 KiB (``fields.compact``, ``share``).
Parsing the response in one piece made that transient the peak of a pass's memory (issue 11).
Here each item is parsed on its own (the standard library's C decoder, ``raw_decode``) and
handed to ``each`` at once, so only one item and one chunk of the response are ever whole.
``ijson`` was measured first: seven times slower than ``json`` and larger objects.

The response is one JSON object (a ``*List``: kind, apiVersion, metadata, items, in any order);
every member other than ``items`` is parsed whole.
"""

from __future__ import annotations

import codecs
import json
from typing import Callable

CHUNK = 1 << 20  # bytes read from the response at a time
_decoder = json.JSONDecoder()
_WHITESPACE = " \t\n\r"


class Unreadable(ValueError):
    """The response is not a JSON object in UTF-8, or it ended early."""


class _Buffer:
    """The text of the response from ``pos`` on, read in chunks from ``read(size) -> bytes``."""

    def __init__(self, read: Callable[[int], bytes]):
        self._read = read
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self.text, self.pos, self.ended = "", 0, False

    def more(self) -> None:
        if self.ended:
            raise Unreadable(f"the response ended early, after {self.pos} characters of its last chunk")
        data = self._read(CHUNK)
        if not data:
            self.ended = True
        try:
            self.text = self.text[self.pos:] + self._utf8.decode(data or b"", final=not data)
        except UnicodeDecodeError as err:
            raise Unreadable(f"not UTF-8: {err}") from None
        self.pos = 0

    def next_char(self) -> str:
        """The next character that is not whitespace (moved past the whitespace only)."""
        while True:
            text, pos = self.text, self.pos
            while pos < len(text) and text[pos] in _WHITESPACE:
                pos += 1
            self.pos = pos
            if pos < len(text):
                return text[pos]
            if self.ended:
                raise Unreadable("the response ended early")
            self.more()

    def expect(self, chars: str) -> str:
        char = self.next_char()
        if char not in chars:
            raise Unreadable(f"expected one of {chars!r} at character {self.pos}, found {char!r}")
        self.pos += 1
        return char

    def value(self):
        """The next JSON value. A value that reaches the end of what has been read is read again
        with more text (a number or a ``true`` cut by the chunk's end would look complete)."""
        self.next_char()
        while True:
            try:
                value, end = _decoder.raw_decode(self.text, self.pos)
                if end < len(self.text) or self.ended:
                    self.pos = end
                    return value
            except json.JSONDecodeError as err:
                if self.ended:
                    raise Unreadable(f"not JSON: {err}") from None
            self.more()


def read(read: Callable[[int], bytes], each: Callable[[dict], dict]) -> dict:
    """Parse a list response read through ``read(size) -> bytes`` (an HTTP response's ``read``).

    Returns the list object with ``items`` holding ``each(item)`` for every item, in order;
    ``each`` is called as soon as an item is parsed. Raises ``Unreadable`` when the response is
    not one JSON object in UTF-8 (RFC 8259) or ends early.
    """
    buffer = _Buffer(read)
    buffer.expect("{")
    out: dict = {}
    if buffer.next_char() == "}":
        return out
    while True:
        key = buffer.value()
        if not isinstance(key, str):
            raise Unreadable(f"expected a member name at character {buffer.pos}")
        buffer.expect(":")
        if key == "items" and buffer.next_char() == "[":
            buffer.pos += 1
            items = out[key] = []
            if buffer.next_char() == "]":
                buffer.pos += 1
            else:
                while True:
                    items.append(each(buffer.value()))
                    if buffer.expect(",]") == "]":
                        break
        else:
            out[key] = buffer.value()
        if buffer.expect(",}") == "}":
            return out
