"""The service's configuration: one class, read once from `TENURE_*` environment variables."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from tenure_server.app.lock_waits import DEFAULT_LOCK_WAITS
from tenure_server.app.status import OverviewLimits
from tenure_server.db.connecting import DEFAULT_CONNECT_TIMEOUT_SECONDS
from tenure_server.db.migrate import (
    DEFAULT_MIGRATION_LOCK_ATTEMPTS,
    DEFAULT_MIGRATION_LOCK_TIMEOUT_MS,
    LockPatience,
)
from tenure_server.domain.limits import DEFAULT_MAX_EARLY_TOLERANCE, Limits
from tenure_server.server.logs import LogFormat


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Settings(BaseSettings):
    """Every limit the service enforces, with its default. See README.md, "Configuration"."""

    model_config = SettingsConfigDict(env_prefix="TENURE_", extra="forbid", frozen=True)

    database_url: SecretStr | None = Field(
        default=None,
        description="PostgreSQL URL; when absent an embedded PostgreSQL is started in data_dir.",
    )
    data_dir: Path = Field(
        default=Path(".tenure/pgdata"), description="Embedded PostgreSQL data folder."
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    workers: int = Field(default=1, ge=1, le=64)
    pool_min_size: int = Field(default=2, ge=0)
    pool_max_size: int = Field(default=10, ge=1)
    pool_acquire_timeout_seconds: float = Field(default=5.0, gt=0)
    connect_timeout_seconds: float = Field(
        default=DEFAULT_CONNECT_TIMEOUT_SECONDS,
        gt=0,
        le=300,
        description="How long start-up waits for a connection before saying the database is "
        "unreachable.",
    )
    statement_timeout_ms: int = Field(default=5000, ge=0)
    lock_timeout_ms: int = Field(default=4000, ge=0)
    lock_wait_max_connections: int = Field(
        default=DEFAULT_LOCK_WAITS,
        ge=0,
        description="Pooled connections per process that renewals waiting behind a locked lease "
        "row (a fenced transaction's FOR SHARE) may hold at once; at most pool_max_size - 1. "
        "The others wait for one holding none, at most the lock timeout, and are then answered "
        "as still locked (undecided in a batch renew, 503 alone); 0: answered so at once.",
    )
    min_ttl_seconds: float = Field(default=1.0, gt=0)
    max_ttl_seconds: float = Field(default=3600.0, gt=0)
    max_wait_seconds: float = Field(default=60.0, ge=0)
    max_early_tolerance_seconds: float = Field(
        default=DEFAULT_MAX_EARLY_TOLERANCE,
        ge=0,
        le=3600,
        description="Most seconds before its occurrence a window may be resolved "
        "(early_tolerance_seconds) or a registered job's window claimed, by the database clock.",
    )
    max_page_size: int = Field(default=500, ge=1)
    default_page_size: int = Field(default=100, ge=1)
    log_level: Literal["debug", "info", "warning", "error", "critical"] = "info"
    migrate_on_start: bool = True
    migration_lock_timeout_ms: int = Field(
        default=DEFAULT_MIGRATION_LOCK_TIMEOUT_MS,
        ge=1,
        le=60000,
        description="How long a migration waits for a lock before it is rolled back and tried "
        "again; requests needing the table wait behind it meanwhile.",
    )
    migration_lock_attempts: int = Field(
        default=DEFAULT_MIGRATION_LOCK_ATTEMPTS,
        ge=1,
        le=1000,
        description="Tries of a migration whose locks stay taken (pausing 0.1 s, doubling up "
        "to 5 s, between two) before the migration fails.",
    )
    allow_async_commit: bool = Field(
        default=False,
        description="Start even when synchronous_commit=off (throw-away environments only).",
    )
    tokens_file: Path | None = Field(
        default=None, description="TOML file of [[token]] entries; authentication is on when set."
    )
    tokens: SecretStr | None = Field(
        default=None, description="The same TOML as the tokens file, given inline."
    )
    allow_unauthenticated_remote: bool = Field(
        default=False,
        description="Allow binding to a non-loopback address with authentication off.",
    )
    max_body_bytes: int = Field(default=262144, ge=1024, description="Largest request body.")
    max_batch_size: int = Field(
        default=1000,
        ge=1,
        le=10000,
        description="Most holdings in one batch renew, verifies in one batch verify.",
    )
    coalesce_max_batch: int = Field(
        default=64,
        ge=1,
        le=1000,
        description="Most concurrent acquires (or renews, releases, fence verifies, batch "
        "verifies) one statement decides together; 1 turns it off.",
    )
    coalesce_max_statements: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Coalesced statements running at once, per process and kind (acquire, renew, "
        "release, verify).",
    )
    rate_limit_per_second: float = Field(
        default=0, ge=0, description="Requests per second per principal; 0 turns it off."
    )
    rate_limit_burst: int = Field(default=50, ge=1)
    # Monitoring, alerts, metrics and logs (issue 6).
    log_format: LogFormat = Field(
        default="auto",
        description="json: one JSON object per line; text: for a terminal; auto: text when "
        "stderr is a terminal, else json.",
    )
    monitor_enabled: bool = Field(
        default=True, description="Run the monitor loop (one replica at a time does the work)."
    )
    monitor_interval_seconds: float = Field(
        default=15.0, gt=0, le=3600, description="Seconds between two passes of the monitor."
    )
    monitor_lease_ttl_seconds: float = Field(
        default=60.0, gt=0, le=3600, description="TTL of the monitor's own lease, tenure.monitor."
    )
    lease_stuck_after_seconds: float = Field(
        default=21600.0,
        gt=0,
        description="A generation held longer is stuck (a job's max_runtime_seconds wins).",
    )
    event_retention_seconds: float = Field(
        default=30 * 86400.0, ge=3600, description="History older than this is deleted."
    )
    retention_batch_size: int = Field(default=1000, ge=1, le=100000)
    monitor_open_alerts_per_pass: int = Field(
        default=1000,
        ge=1,
        le=100000,
        description="Open alerts the monitor judges per pass, a page in turn: with more open, "
        "each is judged (resolved) within ceil(open / this) + 1 passes.",
    )
    monitor_jobs_per_pass: int = Field(
        default=5000,
        ge=1,
        le=100000,
        description="Jobs the monitor evaluates per pass, a page in name order in turn: with "
        "more jobs, each is evaluated within ceil(jobs / this) + 1 passes.",
    )
    monitor_leases_per_pass: int = Field(
        default=1000,
        ge=1,
        le=100000,
        description="Held leases the monitor examines for stuck per pass, those held longest.",
    )
    # What one overview reads (GET /v1/overview, /ui, the /metrics state gauges): bounds, so a
    # read costs the same however much lies beyond them (app/status.py, OverviewLimits).
    overview_jobs: int = Field(
        default=5000,
        ge=1,
        le=100000,
        description="Live jobs an overview evaluates, in name order (GET /v1/jobs pages them all).",
    )
    overview_open_alerts: int = Field(
        default=1000, ge=1, le=100000, description="Open alerts an overview lists, the oldest."
    )
    overview_unregistered: int = Field(
        default=500, ge=1, le=100000, description="Unregistered jobs an overview lists."
    )
    overview_leases: int = Field(
        default=100, ge=1, le=100000, description="Held leases an overview lists, held longest."
    )
    overview_events: int = Field(
        default=30, ge=1, le=10000, description="Recent notable events an overview lists."
    )
    metrics_leases: int = Field(
        default=1000,
        ge=1,
        le=100000,
        description="Held leases the /metrics state gauges are read from, held longest.",
    )
    alert_webhook_urls: list[SecretStr] = Field(
        default_factory=list, description='Generic JSON webhooks, as a JSON list: ["https://…"].'
    )
    alert_slack_webhook_urls: list[SecretStr] = Field(
        default_factory=list, description="Slack-compatible incoming webhooks, as a JSON list."
    )
    webhook_timeout_seconds: float = Field(default=5.0, gt=0, le=60)
    webhook_max_attempts: int = Field(default=10, ge=1, le=100)
    webhook_retry_base_seconds: float = Field(default=2.0, gt=0)
    webhook_retry_max_seconds: float = Field(default=600.0, gt=0)
    metrics_cache_seconds: float = Field(
        default=5.0, ge=0, description="How long /metrics reuses gauges read from the database."
    )
    # The database clock watch (issue 27; adapters/database_clock.py).
    database_clock_interval_seconds: float = Field(
        default=5.0,
        gt=0,
        le=3600,
        description="Seconds between two readings of the database's clock by each replica.",
    )
    database_clock_jump_seconds: float = Field(
        default=0.25,
        gt=0,
        le=3600,
        description="A move of the database's clock between two readings larger than this "
        "(beyond their round trips) is a jump: counted and logged.",
    )
    # The live event stream, GET /v1/events/stream (docs/monitoring.md, "Event stream").
    events_publish_seconds: float = Field(
        default=0.1, gt=0, le=10, description="How often recorded events are sent to every replica."
    )
    events_buffer_size: int = Field(
        default=10000,
        ge=1,
        description="Events waiting to be sent; past it the oldest are dropped.",
    )
    events_history: int = Field(
        default=1000, ge=0, description="Events each replica keeps for Last-Event-ID resumption."
    )
    events_subscriber_queue: int = Field(
        default=1000,
        ge=1,
        description="Events queued for one stream; past it the stream is dropped.",
    )
    events_max_streams: int = Field(
        default=100, ge=0, description="Concurrent event streams per process; more get 503."
    )
    events_max_streams_per_principal: int = Field(
        default=25,
        ge=1,
        description="Concurrent event streams of one principal per process (each open /ui tab "
        "holds one); more get 503. Not applied with authentication off.",
    )
    events_keepalive_seconds: float = Field(
        default=15.0, gt=0, le=3600, description="Seconds between keepalive comments of a stream."
    )

    @model_validator(mode="after")
    def _check_monitoring(self) -> Self:
        if self.monitor_lease_ttl_seconds < 2 * self.monitor_interval_seconds:
            raise ValueError(
                "TENURE_MONITOR_LEASE_TTL_SECONDS must be at least twice "
                "TENURE_MONITOR_INTERVAL_SECONDS (the lease is renewed once per pass)"
            )
        for url in (*self.alert_webhook_urls, *self.alert_slack_webhook_urls):
            if not url.get_secret_value().startswith(("http://", "https://")):
                raise ValueError("webhook URLs must start with http:// or https://")
        return self

    @model_validator(mode="after")
    def _check_bounds(self) -> Self:
        if self.min_ttl_seconds > self.max_ttl_seconds:
            raise ValueError("TENURE_MIN_TTL_SECONDS must not exceed TENURE_MAX_TTL_SECONDS")
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("TENURE_POOL_MIN_SIZE must not exceed TENURE_POOL_MAX_SIZE")
        if self.default_page_size > self.max_page_size:
            raise ValueError("TENURE_DEFAULT_PAGE_SIZE must not exceed TENURE_MAX_PAGE_SIZE")
        if self.tokens_file is not None and self.tokens is not None:
            raise ValueError("set TENURE_TOKENS_FILE or TENURE_TOKENS, not both")
        return self

    @property
    def migration_patience(self) -> LockPatience:
        return LockPatience(self.migration_lock_timeout_ms, self.migration_lock_attempts)

    @property
    def auth_configured(self) -> bool:
        return self.tokens_file is not None or self.tokens is not None

    @property
    def exposed_without_authentication(self) -> bool:
        """Listening on `host` would let anyone who reaches it act as admin, and nothing allows
        it: `tenure serve` refuses to start (`migrate` and `admin` never listen)."""
        return (
            not _loopback(self.host)
            and not self.auth_configured
            and not self.allow_unauthenticated_remote
        )

    def tokens_text(self) -> str | None:
        """The tokens TOML, read from the file when one is configured."""
        if self.tokens is not None:
            return self.tokens.get_secret_value()
        if self.tokens_file is not None:
            return self.tokens_file.read_text(encoding="utf-8")
        return None

    @property
    def lock_waits(self) -> int:
        """The lock-wait limit in force: one connection of the pool always stays free of them."""
        return min(self.lock_wait_max_connections, self.pool_max_size - 1)

    @property
    def lock_wait_patience_seconds(self) -> float | None:
        """How long a renewal of a locked row waits for a place: the lock timeout (0: none)."""
        return self.lock_timeout_ms / 1000 if self.lock_timeout_ms > 0 else None

    @property
    def overview_limits(self) -> OverviewLimits:
        return OverviewLimits(
            jobs=self.overview_jobs,
            open_alerts=self.overview_open_alerts,
            unregistered=self.overview_unregistered,
            leases=self.overview_leases,
            events=self.overview_events,
            gauged_leases=self.metrics_leases,
        )

    @property
    def limits(self) -> Limits:
        return Limits(
            min_ttl_seconds=self.min_ttl_seconds,
            max_ttl_seconds=self.max_ttl_seconds,
            max_wait_seconds=self.max_wait_seconds,
            max_page_size=self.max_page_size,
            default_page_size=self.default_page_size,
            max_batch_size=self.max_batch_size,
            max_early_tolerance_seconds=self.max_early_tolerance_seconds,
        )
