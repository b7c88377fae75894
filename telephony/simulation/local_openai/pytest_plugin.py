"""pytest fixture ``local_openai``: a started ``LocalOpenAI`` with the OpenAI environment pointing at it.

Load it from a root conftest.py: ``pytest_plugins = ["telephony.simulation.local_openai.pytest_plugin"]``. It sets
``OPENAI_BASE_URL`` (``http://127.0.0.1:PORT/v1``) and a fake ``OPENAI_API_KEY`` the server accepts, removes
``OPENAI_ORGANIZATION`` / ``OPENAI_PROJECT``, lets loopback bypass any proxy (``NO_PROXY``: websockets honours the
proxy variables), and fails the test if any session recorded a protocol violation.
A test that provokes violations on purpose takes them with ``server.take_violations()``. Configure the server by
setting ``brain``, ``limits``, ``pacing`` or pushing ``faults`` before the client connects.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from .server import LocalOpenAI

__all__ = ["local_openai"]


@pytest.fixture
async def local_openai(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LocalOpenAI]:
    async with LocalOpenAI() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
        for name in ("OPENAI_ORGANIZATION", "OPENAI_PROJECT"):
            monkeypatch.delenv(name, raising=False)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.setenv(name, ",".join(filter(None, [os.environ.get(name, ""), "127.0.0.1", "localhost"])))
        yield server
        violations = server.violations
    if violations:
        pytest.fail("local OpenAI recorded protocol violations:\n" + "\n".join(violations), pytrace=False)
