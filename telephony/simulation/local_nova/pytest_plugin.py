"""pytest fixture ``local_nova``: a started ``LocalNova`` with the AWS environment pointing at it.

Load it from a root conftest.py: ``pytest_plugins = ["telephony.simulation.local_nova.pytest_plugin"]``. It sets
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, ``AWS_CA_BUNDLE``, fake keys and ``AWS_EC2_METADATA_DISABLED``
(so nothing but 127.0.0.1 is contacted), and fails the test if any stream recorded a protocol
violation. A test that provokes violations on purpose takes them with ``nova.take_violations()``.
Configure the server by setting ``brain``, ``limits``, ``pacing`` before the client connects.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .server import LocalNova

__all__ = ["local_nova"]

_FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDLOCALNOVA0000000",
    "AWS_SECRET_ACCESS_KEY": "local-nova-secret-not-checked",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/dev/null",
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
}


@pytest.fixture
async def local_nova(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LocalNova]:
    async with LocalNova() as nova:
        for name, value in _FAKE_ENV.items():
            monkeypatch.setenv(name, value)
        for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", nova.endpoint)
        monkeypatch.setenv("AWS_CA_BUNDLE", str(nova.ca_file))
        yield nova
        violations = nova.violations
    if violations:
        pytest.fail("local Nova recorded protocol violations:\n" + "\n".join(violations), pytrace=False)
