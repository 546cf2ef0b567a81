"""Authentication configuration: safe defaults, clear refusals, tokens never written anywhere."""

from __future__ import annotations

import logging

import httpx
import pytest
from pydantic import SecretStr

from tenure.auth import hash_token
from tenure_server.adapters.auth import Authenticator, TokensFileError
from tenure_server.domain.errors import RateLimited
from tenure_server.domain.ratelimit import RateLimiter
from tenure_server.server.app import create_app
from tenure_server.server.cli import ConfigurationError, load_settings, serving_settings
from tenure_server.server.settings import Settings
from tests.api.test_leases import problem
from tests.support.lifespan import running
from tests.support.tokens import TOKENS, bearer, tokens_toml


def test_without_authentication_only_loopback_is_served(monkeypatch: pytest.MonkeyPatch) -> None:
    """`tenure serve` beyond loopback with authentication off needs an explicit setting; the
    refusal names the option as typed (or the variable), with no pydantic prefix."""
    for name in ("TENURE_HOST", "TENURE_TOKENS", "TENURE_TOKENS_FILE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError) as refused:
        serving_settings("0.0.0.0", None, None)
    message = str(refused.value.code)
    assert message.startswith("tenure serve: --host 0.0.0.0 without authentication")
    assert "TENURE_ALLOW_UNAUTHENTICATED_REMOTE=true" in message
    assert "TENURE_?" not in message
    assert "Value error" not in message
    monkeypatch.setenv("TENURE_HOST", "0.0.0.0")
    with pytest.raises(ConfigurationError, match=r"^tenure serve: TENURE_HOST=0\.0\.0\.0 without"):
        serving_settings(None, None, None)
    monkeypatch.setenv("TENURE_ALLOW_UNAUTHENTICATED_REMOTE", "true")
    assert serving_settings(None, None, None).host == "0.0.0.0"
    monkeypatch.delenv("TENURE_ALLOW_UNAUTHENTICATED_REMOTE")
    monkeypatch.setenv("TENURE_TOKENS", tokens_toml())
    assert serving_settings(None, None, None).auth_configured
    monkeypatch.delenv("TENURE_TOKENS")
    for loopback in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert serving_settings(loopback, None, None).host == loopback


def test_commands_that_never_listen_accept_any_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """`tenure migrate` and `tenure admin` read the same settings but never listen: the
    image's TENURE_HOST=0.0.0.0 without tokens is no reason to refuse them."""
    monkeypatch.setenv("TENURE_HOST", "0.0.0.0")
    for name in ("TENURE_TOKENS", "TENURE_TOKENS_FILE", "TENURE_ALLOW_UNAUTHENTICATED_REMOTE"):
        monkeypatch.delenv(name, raising=False)
    assert load_settings().exposed_without_authentication


def test_a_wrong_option_or_variable_is_named_as_the_user_gave_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bad value is named by the option typed (`--port`) or the variable set (`TENURE_PORT`);
    a rule between settings is said in its own words, without pydantic's "Value error, "."""
    with pytest.raises(ConfigurationError, match=r"^invalid configuration: --port: "):
        serving_settings(None, 70000, None)
    monkeypatch.setenv("TENURE_PORT", "http")
    with pytest.raises(ConfigurationError, match=r"^invalid configuration: TENURE_PORT: "):
        load_settings()
    monkeypatch.delenv("TENURE_PORT")
    monkeypatch.setenv("TENURE_POOL_MIN_SIZE", "50")
    with pytest.raises(ConfigurationError) as refused:
        load_settings()
    assert str(refused.value.code) == (
        "invalid configuration: TENURE_POOL_MIN_SIZE must not exceed TENURE_POOL_MAX_SIZE"
    )


def entry(**fields: str) -> str:
    values = {
        "principal": '"a"',
        "sha256": f'"{hash_token("t")}"',
        "roles": '["client"]',
        "namespaces": '["*"]',
    } | fields
    return "[[token]]\n" + "\n".join(f"{key} = {value}" for key, value in values.items())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not toml [", "not TOML"),
        ("", "one or more"),
        (entry(sha256='"plain"'), "sha256"),
        (entry(roles='["root"]'), "roles"),
        (entry(namespaces="[]"), "namespaces"),
        (entry(principal='"a b"'), "principal"),
        (entry(token='"t"'), "unknown"),
        (entry() + "\n" + entry(), "twice"),
        (entry() + "\n" + entry(sha256=f'"{hash_token("u")}"', roles='["admin"]'), "different"),
    ],
)
def test_a_malformed_tokens_file_is_refused_at_start(text: str, message: str) -> None:
    """Every mistake in the tokens file stops start-up with a message naming it."""
    with pytest.raises(TokensFileError, match=message):
        Authenticator.from_toml(text)


def test_rate_limit_refills_over_time() -> None:
    """A bucket of 2 at 1/s: two requests pass, the third waits about a second, then passes."""
    now = [0.0]
    limiter = RateLimiter(1.0, 2, lambda: now[0])
    limiter.take("p")
    limiter.take("p")
    with pytest.raises(RateLimited) as refused:
        limiter.take("p")
    assert 0.9 < refused.value.retry_after_seconds <= 1.0
    limiter.take("other")
    now[0] = 1.0
    limiter.take("p")


async def test_a_principal_over_its_rate_gets_429(database_url: str) -> None:
    """With a rate limit set, bursts beyond it are 429 with Retry-After; other principals pass."""
    settings = Settings(
        database_url=database_url,
        tokens=SecretStr(tokens_toml()),
        rate_limit_per_second=1,
        rate_limit_burst=3,
    )
    app = create_app(settings)
    async with running(app) as served:
        transport = httpx.ASGITransport(app=served)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
            statuses = [
                (
                    await api.get("/v1/leases/billing.x", headers=bearer("billing-reader"))
                ).status_code
                for _ in range(5)
            ]
            assert statuses[:3] == [404, 404, 404]
            limited = await api.get("/v1/leases/billing.x", headers=bearer("billing-reader"))
            problem(limited, 429, "rate-limited")
            assert int(limited.headers["retry-after"]) >= 1
            other = await api.get("/v1/leases/billing.x", headers=bearer("admin"))
            assert other.status_code == 404


async def test_tokens_never_appear_in_logs(
    secured: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Successful and refused requests log nothing that contains a token."""
    with caplog.at_level(logging.DEBUG):
        for principal in TOKENS:
            await secured.post(
                "/v1/leases/billing.job/acquire",
                json={"holder": "h", "ttl_seconds": 30},
                headers=bearer(principal),
            )
        await secured.get("/v1/leases/x", headers={"Authorization": "Bearer tnr_wrong-secret"})
    for token in [*TOKENS.values(), "tnr_wrong-secret"]:
        assert token not in caplog.text
