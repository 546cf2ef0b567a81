"""What the live Prometheus test reads out of the chart's expressions: the series selectors of a
PromQL expression, metric names against an exposition, and a Grafana dashboard's targets with its
variables given the values Grafana would give them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Grafana's built-in variables, as Grafana would set them for a dashboard over the last hour or
# so: a rate window that spans several scrapes, an interval, the range.
GRAFANA_BUILT_INS = {"__rate_interval": "1m", "__interval": "30s", "__range": "1h"}
# Series Prometheus makes itself: never in the service's exposition.
PROMETHEUS_OWN = {"up", "ALERTS", "ALERTS_FOR_STATE"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
OPERATORS = {"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"}
# Aggregations may put their grouping before the parenthesis: `max by (job) (…)`.
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values"}
AGGREGATIONS |= {"bottomk", "topk", "quantile"}
SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created")

_TOKEN = re.compile(
    r"""
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<grouping>\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\))
  | (?P<range>\[[^\]]*\])
  | (?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?P<call>\s*\()?(?P<matchers>\s*\{[^}]*\})?
  | (?P<bare>\{[^}]*\})
  | (?P<number>[0-9][0-9A-Za-z.]*)
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def selectors(expression: str) -> list[str]:
    """The series selectors of `expression`, as written (`name{matchers}`, without range or
    offset): every identifier that is neither a function, an aggregation, a keyword nor a label
    list of by/on/…, with its matchers."""
    found: list[str] = []
    for token in _TOKEN.finditer(expression):
        if token["bare"]:
            found.append(token["bare"])
        name = token["name"]
        if name is None or token["call"] or name in KEYWORDS | OPERATORS | AGGREGATIONS:
            continue
        found.append(name + (token["matchers"] or "").strip())
    return found


def metric_name(selector: str) -> str | None:
    """The metric a selector names (None for `{__name__=~…}` and the like)."""
    match = re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", selector)
    return match.group(0) if match else None


def exported(name: str, families: set[str], samples: set[str]) -> bool:
    """Whether an exposition with these family and sample names has `name`: a sample name as
    it is (`…_total`, `…_bucket`), or a family after its suffix is taken off."""
    if name in samples or name in families:
        return True
    return any(name.endswith(suffix) and name[: -len(suffix)] in families for suffix in SUFFIXES)


@dataclass(frozen=True)
class Target:
    panel: str
    expression: str


def substitute(text: str, values: dict[str, str]) -> str:
    """`$name` and `${name}` replaced by their values (longest names first)."""
    for name in sorted(values, key=len, reverse=True):
        text = text.replace("${" + name + "}", values[name]).replace("$" + name, values[name])
    return text


def dashboard_variables(dashboard: dict[str, Any]) -> dict[str, str]:
    """Each query variable at Grafana's "All" (its allValue), and the built-ins."""
    values = dict(GRAFANA_BUILT_INS)
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            assert variable.get("includeAll"), variable["name"]
            assert variable.get("allValue"), variable["name"]
            values[variable["name"]] = variable["allValue"]
    return values


def dashboard_targets(path: Path) -> list[Target]:
    """Every panel target's expression with the variables substituted, and each query
    variable's series selector (`label_values(selector, label)`)."""
    dashboard = json.loads(path.read_text("utf-8"))
    values = dashboard_variables(dashboard)
    targets = [
        Target(panel["title"], substitute(target["expr"], values))
        for panel in _panels(dashboard["panels"])
        for target in panel.get("targets", ())
    ]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"] if isinstance(variable["query"], dict) else ""
            match = re.fullmatch(r"label_values\((.*),\s*\w+\)", query or variable["definition"])
            assert match, f"variable {variable['name']}: {query!r}"
            targets.append(Target(f"variable {variable['name']}", substitute(match[1], values)))
    return targets


def _panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Panels, with those inside collapsed rows."""
    return [inner for panel in panels for inner in (panel, *_panels(panel.get("panels", [])))]
