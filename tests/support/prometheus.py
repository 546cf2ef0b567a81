"""A real Prometheus (Debian's `prometheus` package) as a process: scraping given targets every
second, evaluating given rule files every second, on a free loopback port and a fresh data folder,
with its HTTP API wrapped for queries, rules and alerts.

    with prometheus({"tenure": ["127.0.0.1:8080"]}, rule_files=[rules]) as server:
        server.query("up")
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tests.support.processes import free_port, running

INTERVAL = "1s"
WAIT_SECONDS = 30.0
T = TypeVar("T")


def prometheus_program() -> str | None:
    """The prometheus program, or None when it is not installed."""
    return shutil.which("prometheus")


class QueryFailed(AssertionError):
    """Prometheus refused a query: a syntax error or an evaluation error."""


@dataclass(frozen=True)
class Prometheus:
    url: str

    def _api(self, path: str, **parameters: str) -> Any:
        answer = httpx.get(f"{self.url}/api/v1/{path}", params=parameters, timeout=10)
        body = answer.json()
        if body.get("status") != "success":
            raise QueryFailed(f"{path} {parameters}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expression: str) -> list[dict[str, Any]]:
        """The instant vector (or scalar, as one sample) of `expression` now."""
        data = self._api("query", query=expression)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        result: list[dict[str, Any]] = data["result"]
        return result

    def rule_groups(self) -> list[dict[str, Any]]:
        groups: list[dict[str, Any]] = self._api("rules")["groups"]
        return groups

    def alerts(self) -> list[dict[str, Any]]:
        alerts: list[dict[str, Any]] = self._api("alerts")["alerts"]
        return alerts

    def wait_for(self, condition: Callable[[], T], timeout: float = WAIT_SECONDS) -> T:
        """The condition's first true value, asked every half second; fails after `timeout`."""
        deadline = time.monotonic() + timeout
        while not (result := condition()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"not met within {timeout} s: {condition}")
            time.sleep(0.5)
        return result


def configuration(targets: Mapping[str, Sequence[str]], rule_files: Sequence[Path]) -> str:
    """A configuration scraping each job's targets and evaluating the rules every second; the
    scrape keeps Prometheus's default honor_labels (false), as the chart's ServiceMonitor does."""
    config = {
        "global": {"scrape_interval": INTERVAL, "evaluation_interval": INTERVAL},
        "rule_files": [str(path) for path in rule_files],
        "scrape_configs": [
            {
                "job_name": job,
                "scrape_timeout": INTERVAL,
                "static_configs": [{"targets": list(hosts)}],
            }
            for job, hosts in targets.items()
        ],
    }
    return json.dumps(config)  # YAML is a superset of JSON


@contextmanager
def prometheus(
    targets: Mapping[str, Sequence[str]],
    *,
    rule_files: Sequence[Path] = (),
    output: int | None = subprocess.DEVNULL,
) -> Iterator[Prometheus]:
    """Prometheus scraping `targets` (job name: host:port) until the block ends."""
    program = prometheus_program()
    if program is None:
        raise FileNotFoundError("prometheus is not installed (apt-get install prometheus)")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="tnprom", ignore_cleanup_errors=True) as folder:
        config = Path(folder) / "prometheus.yml"
        config.write_text(configuration(targets, rule_files), "utf-8")
        command = [
            program,
            f"--config.file={config}",
            f"--storage.tsdb.path={Path(folder) / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ]
        with running(command, port, env={}, output=output, ready_path="/-/ready") as server:
            yield Prometheus(server.url)
