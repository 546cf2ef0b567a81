"""Fixtures for the client tests: an SDK client of the real service (the `service` fixture of
tests/conftest.py, over real HTTP on a loopback port, on the per-test database), and a TCP proxy in
front of it that can stop forwarding (a network fault, injected on the real path: nothing about the
service or the database is faked); and the service over https, behind such a proxy that ends TLS
with a certificate of a throw-away CA (`ca`, `https_proxy`)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

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


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    """A throw-away certificate authority that no trust store holds."""
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> Path:
    """The CA's certificate, as the CA bundle a user would point `verify=` or SSL_CERT_FILE at."""
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture(scope="session")
def server_tls(ca: trustme.CA) -> ssl.SSLContext:
    """The server side of TLS, with a certificate for 127.0.0.1 issued by `ca`."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return context


@pytest.fixture
def https_proxy(service: LiveService, server_tls: ssl.SSLContext) -> Iterator[Proxy]:
    """The service over https (`url`), TLS ended in front of it with `ca`'s certificate."""
    front = Proxy(service.port, tls=server_tls)
    front.start()
    yield front
    front.stop()
