"""Fixtures for the client tests: an SDK client of the real service (the `service` fixture of
tests/conftest.py, over real HTTP on a loopback port, on the per-test database), and a TCP proxy in
front of it that can stop forwarding (a network fault, injected on the real path: nothing about the
service or the database is faked)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tenure import Tenure
from tests.support.live_service import LiveService, Proxy


@pytest.fixture
def proxy(service: LiveService) -> Iterator[Proxy]:
    front = Proxy(service.port)
    front.start()
    yield front
    front.stop()


@pytest.fixture
def client(service_url: str) -> Iterator[Tenure]:
    with Tenure(service_url) as tenure:
        yield tenure
