"""The live Prometheus test's reading of PromQL and of the dashboard: the selectors it finds are
the expression's series, and nothing else."""

from __future__ import annotations

from tests.deploy.promql import exported, selectors, substitute


def test_selectors_are_the_series_of_an_expression() -> None:
    """Functions, aggregations with their grouping before or after, by/on label lists, ranges,
    strings and keywords are not series; matchers stay with their metric."""
    expression = (
        "max by (namespace, job) (tenure_database_up) == 0 or max by (namespace, job) "
        "(tenure_ready) == 0 unless on (namespace, job) group by (namespace, job) "
        '(present_over_time(up{job="tenure"}[1d])) and sum(rate('
        'tenure_http_request_duration_seconds_bucket{status=~"[45].."}[5m] offset 1m)) by (le) '
        "> bool 0.5 * histogram_quantile(0.99, x_total)"
    )
    assert selectors(expression) == [
        "tenure_database_up",
        "tenure_ready",
        'up{job="tenure"}',
        'tenure_http_request_duration_seconds_bucket{status=~"[45].."}',
        "x_total",
    ]


def test_metric_names_match_an_exposition_by_family_or_sample() -> None:
    """A counter's `_total`, a histogram's `_bucket`/`_count` and a gauge match their family;
    an unknown name does not."""
    families = {"tenure_lease_releases", "tenure_http_request_duration_seconds", "tenure_ready"}
    assert exported("tenure_lease_releases_total", families, set())
    assert exported("tenure_http_request_duration_seconds_bucket", families, set())
    assert exported("tenure_ready", families, set())
    assert not exported("tenure_lease_grants_total", families, set())


def test_grafana_variables_are_substituted_in_both_forms() -> None:
    """`$job` and `${job}`, and the longer `$__rate_interval` before any shorter name."""
    values = {"job": ".+", "__rate_interval": "1m", "__range": "1h"}
    assert substitute('rate(x{job=~"${job}"}[$__rate_interval]) $job', values) == (
        'rate(x{job=~".+"}[1m]) .+'
    )
