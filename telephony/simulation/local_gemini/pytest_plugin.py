"""pytest fixture ``local_gemini``: a started ``LocalGemini`` with the google-genai environment pointing at it.

Load it from a root conftest.py: ``pytest_plugins = ["telephony.simulation.local_gemini.pytest_plugin"]``. It sets
``GOOGLE_GEMINI_BASE_URL``, ``SSL_CERT_FILE`` (the throwaway CA) and a fake ``GOOGLE_API_KEY`` (so nothing but
127.0.0.1 is contacted), and fails the test if any connection recorded a protocol violation. A test that provokes
violations on purpose takes them with ``gemini.take_violations()``. Configure the server by setting ``brain``,
``limits``, ``pacing``, ``api_keys``, ``models`` or pushing ``faults`` before the client connects.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .server import LocalGemini

__all__ = ["FAKE_API_KEY", "local_gemini"]

FAKE_API_KEY = "local-gemini-key-not-checked"


@pytest.fixture
async def local_gemini(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LocalGemini]:
    async with LocalGemini() as gemini:
        monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
        for name in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_VERTEX_BASE_URL", "SSL_CERT_DIR"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini.base_url)
        monkeypatch.setenv("SSL_CERT_FILE", str(gemini.ca_file))
        yield gemini
        violations = gemini.violations
    if violations:
        pytest.fail("local Gemini recorded protocol violations:\n" + "\n".join(violations), pytrace=False)
