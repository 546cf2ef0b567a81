"""The chart's Grafana dashboard as Grafana reads it: a dashboard model whose every query goes to
the data source the user picks, with panels laid out on Grafana's 24-column grid. (What its
expressions return is tests/deploy/test_live_prometheus.py's part.)"""

from __future__ import annotations

import json
from typing import Any

from tests.deploy.helm_chart import CHART

DASHBOARD = CHART / "files" / "grafana-dashboard.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def dashboard() -> dict[str, Any]:
    model: dict[str, Any] = json.loads(DASHBOARD.read_text("utf-8"))
    return model


def panels() -> list[dict[str, Any]]:
    return [panel for panel in dashboard()["panels"] if panel["type"] != "row"]


def test_the_data_source_is_a_variable() -> None:
    """A `datasource` variable of Prometheus data sources; no panel or target names a fixed one,
    so the dashboard imports into any Grafana."""
    model = dashboard()
    assert model["schemaVersion"] >= 36
    assert model["uid"] == "tenure"
    assert model["id"] is None
    variables = {variable["name"]: variable for variable in model["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"] == DATASOURCE, variable["name"]
            assert variable["includeAll"], variable["name"]
            assert variable["allValue"], variable["name"]
    for panel in panels():
        assert panel["datasource"] == DATASOURCE, panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, panel["title"]


def test_panels_have_unique_ids_targets_and_fit_the_grid() -> None:
    """Unique panel ids; each panel has a title, a description and at least one target with an
    expression and a refId unique within it; every panel lies within the 24 columns."""
    ids = [panel["id"] for panel in dashboard()["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels():
        assert panel["title"], panel
        assert panel["description"], panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert refs, panel["title"]
        assert len(refs) == len(set(refs)), panel["title"]
        assert all(target["expr"].strip() for target in panel["targets"]), panel["title"]
        assert 0 <= panel["gridPos"]["x"] <= 24 - panel["gridPos"]["w"], panel["title"]


def test_per_job_panels_use_the_label_prometheus_stores() -> None:
    """Tenure's `job` label is stored as `exported_job` (it collides with the scrape job): no
    expression groups or filters Tenure's job metrics by `job`, which is the scrape job there."""
    for panel in panels():
        for target in panel["targets"]:
            expression = target["expr"]
            if "tenure_job_" in expression or "tenure_window_" in expression:
                assert "by (job" not in expression, expression
                assert "(job)" not in expression, expression
