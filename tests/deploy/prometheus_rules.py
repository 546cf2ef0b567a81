"""The chart's alerting rules as their tests see them: the rule file, its promtool unit tests,
and Prometheus's own `promtool` (Debian's `prometheus` package) to check and test them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.helm_chart import CHART, ROOT

RULES = CHART / "files" / "prometheus-rules.yaml"


UNIT_TESTS = ROOT / "tests" / "deploy" / "promtool" / "tenure-rules.test.yaml"


RUNBOOK = ROOT / "docs" / "operations.md"


def rule_groups() -> list[dict[str, Any]]:
    """The groups of the rule file, as Prometheus reads them."""
    groups: list[dict[str, Any]] = yaml.safe_load(RULES.read_text("utf-8"))["groups"]
    return groups


def alerts() -> list[dict[str, Any]]:
    """Every alerting rule of the file, in file order."""
    return [rule for group in rule_groups() for rule in group["rules"] if "alert" in rule]


def promtool(*arguments: str | Path) -> str:
    """Run promtool; its output, or the test fails with it. Skips when promtool is absent."""
    binary = shutil.which("promtool")
    if binary is None:
        pytest.skip("promtool is not installed (apt-get install -y prometheus); skipped")
    result = subprocess.run(
        [binary, *map(str, arguments)], capture_output=True, text=True, timeout=60, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return output


def check_rule_groups(groups: list[dict[str, Any]], folder: Path) -> str:
    """`promtool check rules` on these groups, written as a rule file in `folder`."""
    path = folder / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False), "utf-8")
    return promtool("check", "rules", path)
