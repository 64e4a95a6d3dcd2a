"""The malloc arena limit every command sets (``agent/common/arenas.py``)."""

import os
import subprocess
import sys

import pytest

from agent.common import arenas


def test_an_explicit_malloc_arena_max_is_left_to_glibc(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert arenas.limit() is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_glibc_agrees_to_the_limit():
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    code = "from agent.common import arenas; print(arenas.limit())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else ""
    assert out.strip() == ("True" if (libc or "").startswith("glibc") else "False")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_trim_hands_back_the_heap_where_glibc_is_the_c_library():
    code = "from agent.common import arenas; b = [bytearray(200_000) for _ in range(50)]; del b; print(arenas.trim())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else ""
    assert out.strip() in (("True", "False") if (libc or "").startswith("glibc") else ("False",))
