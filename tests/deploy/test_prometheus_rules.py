"""The alerting rules shipped with the chart: Prometheus's own promtool checks them and runs their
unit tests, which make every alert fire when it should and stay silent when it should not; each
alert names its severity, says what to do, and links a runbook section that exists."""

from __future__ import annotations

import re

import yaml

from tests.deploy.prometheus_rules import RULES, RUNBOOK, UNIT_TESTS, alerts, promtool

MONITORING_GUIDE = RULES.parents[3] / "docs" / "monitoring.md"


def test_promtool_checks_the_rule_file() -> None:
    """`promtool check rules` accepts the file and finds every alert."""
    output = promtool("check", "rules", RULES)
    assert f"SUCCESS: {len(alerts())} rules found" in output


def test_promtool_unit_tests_pass() -> None:
    """`promtool test rules` passes: each alert's expected firing and silence holds."""
    assert "SUCCESS" in promtool("test", "rules", UNIT_TESTS)


def test_every_alert_is_unit_tested_firing_and_silent() -> None:
    """The unit tests expect each alert to fire at some time and to be silent at another."""
    cases = [
        case
        for group in yaml.safe_load(UNIT_TESTS.read_text("utf-8"))["tests"]
        for case in group.get("alert_rule_test", [])
    ]
    for alert in alerts():
        expected = [case["exp_alerts"] for case in cases if case["alertname"] == alert["alert"]]
        assert any(expected), f"{alert['alert']} is never expected to fire"
        assert not all(expected), f"{alert['alert']} is never expected to be silent"


def test_every_alert_says_how_bad_and_what_to_do() -> None:
    """A severity, a summary, a description and a runbook link to the alert's own section."""
    for alert in alerts():
        assert alert["labels"]["severity"] in {"critical", "warning"}
        annotations = alert["annotations"]
        assert set(annotations) == {"summary", "description", "runbook_url"}
        assert annotations["runbook_url"] == f"docs/operations.md#{alert['alert'].lower()}"


def test_runbook_has_one_section_per_alert() -> None:
    """docs/operations.md's "Runbook: alerts" has a section for each alert and no other: the
    runbook_url anchors (GitHub's: the heading in lower case) all resolve."""
    guide = RUNBOOK.read_text("utf-8")
    runbook = guide.split("\n## Runbook: alerts\n", 1)[1].split("\n## ", 1)[0]
    sections = re.findall(r"^### (\S+)$", runbook, flags=re.MULTILINE)
    assert sorted(sections) == sorted(alert["alert"] for alert in alerts())


def test_rules_use_only_documented_metrics() -> None:
    """Every tenure_* metric in an expression is in docs/monitoring.md's Metrics table (counters
    are documented with their _total); `up` is Prometheus's own."""
    documented = set(
        re.findall(r"^\| `(tenure_\w+)` \|", MONITORING_GUIDE.read_text("utf-8"), re.M)
    )
    used = {name for alert in alerts() for name in re.findall(r"\btenure_\w+", alert["expr"])}
    assert used
    assert used - documented == set()
