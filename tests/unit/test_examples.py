"""The examples, tried in the README's order, stay out of each other's way: each closes its
windows under a job of its own, so one never makes another print `skipped: completed`."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def curl_cycle_jobs() -> set[str]:
    section = (ROOT / "README.md").read_text("utf-8").split("## A full cycle with curl", 1)[1]
    return set(re.findall(r"/v1/jobs/([^/\s]+)/windows", section.split("\n## ", 1)[0]))


def python_jobs() -> dict[str, str]:
    """Each Python example that runs a job names it once, in `JOB`."""
    jobs = {}
    for path in sorted(EXAMPLES.glob("*.py")):
        source = path.read_text("utf-8")
        if "once_per(" in source or "run_once(" in source:
            found = re.search(r'^JOB = "([^"]+)"$', source, re.MULTILINE)
            assert found, f"{path.name} runs a job but names it in no JOB constant"
            jobs[path.name] = found.group(1)
    return jobs


def node_jobs() -> dict[str, str]:
    """Each Node.js example that runs a job names it once, in `const JOB`."""
    jobs = {}
    for path in sorted((EXAMPLES / "node").glob("*.js")):
        source = path.read_text("utf-8")
        if "runOnce(" in source:
            found = re.search(r'^const JOB = "([^"]+)";$', source, re.MULTILINE)
            assert found, f"{path.name} runs a job but names it in no JOB constant"
            jobs[f"node/{path.name}"] = found.group(1)
    return jobs


def cronjob_job() -> str:
    manifest = yaml.safe_load((EXAMPLES / "kubernetes-cronjob.yaml").read_text("utf-8"))
    (container,) = manifest["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    arguments: list[str] = container["args"]
    return arguments[arguments.index("run") + 1]


def test_every_example_closes_its_days_under_a_job_of_its_own() -> None:
    """The curl cycle, each Python and Node.js example and the CronJob name different jobs."""
    (curl,) = curl_cycle_jobs()
    jobs = {
        "README curl cycle": curl,
        **python_jobs(),
        **node_jobs(),
        "kubernetes-cronjob.yaml": cronjob_job(),
    }
    assert len(jobs) == 7
    assert len(set(jobs.values())) == len(jobs), jobs
