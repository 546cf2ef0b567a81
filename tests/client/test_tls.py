"""The clients over https trust exactly the certificate authorities httpx's clients would
($SSL_CERT_FILE, else $SSL_CERT_DIR, else certifi's bundle) or those `verify=` names, whichever
pool sends their requests (aiohttp's, reqwest's or httpx's own; issue 29)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme

from tenure import NO_RETRY, AsyncTenure, Tenure, TransportError
from tenure._sync_transport import reqwest_verification
from tests.support.live_service import LiveService, Proxy

# The handshake's failure as OpenSSL (httpx's and aiohttp's pools) and rustls (reqwest's) say it.
UNTRUSTED = r"CERTIFICATE_VERIFY_FAILED|UnknownIssuer"


@pytest.fixture(autouse=True)
def _no_trust_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test says which CAs the environment names: none unless it sets them."""
    for variable in ("SSL_CERT_FILE", "SSL_CERT_DIR", "TENURE_CA_BUNDLE"):
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def other_ca_file(tmp_path: Path) -> Path:
    """A CA bundle that holds another CA than the one that issued the service's certificate."""
    path = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(path))
    return path


def cycle(client: Tenure, name: str) -> None:
    client.release(client.acquire(name, 30))


async def acycle(client: AsyncTenure, name: str) -> None:
    await client.release(await client.acquire(name, 30))


async def test_clients_trust_the_ca_that_verify_names(https_proxy: Proxy, ca_file: Path) -> None:
    """`Tenure` and `AsyncTenure` given `verify=` a CA bundle's path, or an `ssl.SSLContext`
    holding the CA, are answered over https by a service with that CA's certificate."""
    for verify in (str(ca_file), ca_file, ssl.create_default_context(cafile=ca_file)):
        with Tenure(https_proxy.url, verify=verify) as client:
            cycle(client, "tls-verify")
        async with AsyncTenure(https_proxy.url, verify=verify) as aclient:
            await acycle(aclient, "tls-verify")


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "TENURE_CA_BUNDLE"])
async def test_clients_trust_the_ca_the_environment_names(
    https_proxy: Proxy, ca_file: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """$SSL_CERT_FILE (as for httpx) and, for `from_env()` and so `tenure run`,
    $TENURE_CA_BUNDLE name the CAs `Tenure` and `AsyncTenure` trust."""
    monkeypatch.setenv(variable, str(ca_file))
    with Tenure.from_env(https_proxy.url) as client:
        cycle(client, "tls-environment")
    async with AsyncTenure.from_env(https_proxy.url) as aclient:
        await acycle(aclient, "tls-environment")


@pytest.fixture
def https_nowhere(dead_url: str, server_tls: ssl.SSLContext) -> Iterator[str]:
    """An https URL whose certificate `ca` issued; the handshake is all it answers."""
    front = Proxy(httpx.URL(dead_url).port or 0, tls=server_tls)
    front.start()
    yield front.url
    front.stop()


# How a client is left without the service's CA: httpx's default (certifi's bundle), or a CA
# bundle without it in $SSL_CERT_FILE (then reqwest's pool sends `Tenure`'s requests).
@pytest.mark.parametrize("trusted", ["default", "SSL_CERT_FILE"])
async def test_clients_refuse_a_certificate_of_an_unknown_ca(
    https_nowhere: str, other_ca_file: Path, monkeypatch: pytest.MonkeyPatch, trusted: str
) -> None:
    """Without the service's CA, a request of either client fails at once with the SDK's
    `TransportError`, whose message says the certificate was not trusted, as a plain
    `httpx.AsyncClient()` fails."""
    if trusted != "default":
        monkeypatch.setenv(trusted, str(other_ca_file))
    async with httpx.AsyncClient() as plain:
        with pytest.raises(httpx.ConnectError, match=UNTRUSTED):
            await plain.get(https_nowhere)
    with (
        Tenure(https_nowhere, retry=NO_RETRY, timeout=5) as client,
        pytest.raises(TransportError, match=UNTRUSTED),
    ):
        client.acquire("tls-refused", 30)
    async with AsyncTenure(https_nowhere, retry=NO_RETRY, timeout=5) as aclient:
        with pytest.raises(TransportError, match=UNTRUSTED):
            await aclient.acquire("tls-refused", 30)


async def test_verify_false_trusts_any_certificate(https_proxy: Proxy) -> None:
    """`verify=False`, as for httpx: the certificate is not checked (both clients)."""
    with Tenure(https_proxy.url, verify=False) as client:
        cycle(client, "tls-unverified")
    async with AsyncTenure(https_proxy.url, verify=False) as aclient:
        await acycle(aclient, "tls-unverified")


async def test_a_client_certificate_goes_in_the_context(
    service: LiveService, ca: trustme.CA, ca_file: Path
) -> None:
    """Mutual TLS: a service that requires a client certificate answers both clients given an
    `ssl.SSLContext` with one loaded, and refuses them without it."""
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    ca.configure_trust(server)
    server.verify_mode = ssl.CERT_REQUIRED
    context = ssl.create_default_context(cafile=ca_file)
    ca.issue_cert("billing-jobs").configure_cert(context)
    front = Proxy(service.port, tls=server)
    front.start()
    try:
        with Tenure(front.url, verify=context) as client:
            cycle(client, "tls-mutual")
        async with AsyncTenure(front.url, verify=context) as aclient:
            await acycle(aclient, "tls-mutual")
        with (
            Tenure(front.url, verify=ca_file, retry=NO_RETRY) as client,
            pytest.raises(TransportError),
        ):
            cycle(client, "tls-mutual")
    finally:
        front.stop()


HTTPS = "https://tenure.example"


@pytest.mark.parametrize(
    ("url", "verify", "environment", "expected"),
    [
        ("http://tenure.example", "ca.pem", {}, True),  # no TLS: nothing to trust
        (HTTPS, False, {}, False),
        (HTTPS, True, {"SSL_CERT_FILE": "ca.pem"}, True),
        (HTTPS, True, {}, None),  # httpx: certifi's bundle; reqwest: the system's store
        (HTTPS, True, {"SSL_CERT_DIR": "certs"}, None),
        (HTTPS, True, {"SSL_CERT_FILE": "ca.pem", "SSL_CERT_DIR": "certs"}, None),
        (HTTPS, "ca.pem", {}, None),  # reqwest would trust the system's store too
        (HTTPS, ssl.create_default_context(), {}, None),
    ],
)
def test_reqwest_sends_only_where_it_trusts_what_httpx_would(
    url: str,
    verify: bool | str | ssl.SSLContext,
    environment: dict[str, str],
    expected: bool | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """reqwest's pool sends `Tenure`'s requests with its own roots (True) or none checked
    (False) only where that is what httpx would trust; elsewhere (None) httpx's own pool does."""
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    assert reqwest_verification(verify, url, None) is expected
