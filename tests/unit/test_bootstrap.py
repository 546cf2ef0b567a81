"""The two commands of the README set up one .venv with what each needs: `scripts/serve` only
the server extra (a quick first start), `scripts/test` and `.ci/run` the dev extra, added to the
same .venv when they run after it. Checked with a stand-in interpreter that records what it is
asked to install, so that no package is downloaded."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Records its arguments, one call a line; `-m pip install` then succeeds without doing anything.
RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "$(dirname "$0")/../calls"
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The scripts and pyproject.toml in a folder of their own, with a .venv whose python and
    tenure only record their calls."""
    for script in ("scripts/bootstrap", "scripts/serve", "scripts/test"):
        (tmp_path / script).parent.mkdir(exist_ok=True)
        shutil.copy2(ROOT / script, tmp_path / script)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_folder = tmp_path / ".venv" / "bin"
    bin_folder.mkdir(parents=True)
    for program in ("python", "tenure"):
        (bin_folder / program).write_text(RECORDER)
        (bin_folder / program).chmod(stat.S_IRWXU)
    return tmp_path


def run(checkout: Path, *command: str) -> list[str]:
    """Run a script of the checkout; the calls it made to .venv's programs."""
    calls = checkout / ".venv" / "calls"
    calls.unlink(missing_ok=True)
    subprocess.run(list(command), cwd=checkout, check=True, capture_output=True, timeout=30)
    return calls.read_text().splitlines() if calls.exists() else []


def installs(calls: list[str]) -> list[str]:
    return [call.rsplit(" ", 1)[-1] for call in calls if " -m pip install " in call]


def test_serve_installs_only_the_server_extra(checkout: Path) -> None:
    """scripts/serve installs `.[server]` once, then serves straight away."""
    assert run(checkout, "scripts/serve", "--port", "9") == [
        "python -m pip install --quiet --disable-pip-version-check -e .[server]",
        "tenure serve --port 9",
    ]
    assert run(checkout, "scripts/serve") == ["tenure serve"]


def test_test_after_serve_adds_the_dev_extra_to_the_same_venv(checkout: Path) -> None:
    """scripts/test after scripts/serve installs `.[dev]`; afterwards neither installs again
    (dev includes server)."""
    assert installs(run(checkout, "scripts/serve")) == [".[server]"]
    assert run(checkout, "scripts/test", "-q") == [
        "python -m pip install --quiet --disable-pip-version-check -e .[dev]",
        "python -m pytest -q",
    ]
    assert installs(run(checkout, "scripts/serve")) == []
    assert installs(run(checkout, "scripts/bootstrap")) == []


def test_a_changed_pyproject_installs_again(checkout: Path) -> None:
    """The stamps belong to one pyproject.toml: after a change, each extra is installed anew."""
    run(checkout, "scripts/bootstrap")
    with (checkout / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n# changed\n")
    assert installs(run(checkout, "scripts/serve")) == [".[server]"]
    assert installs(run(checkout, "scripts/bootstrap")) == [".[dev]"]


def test_ci_installs_the_dev_extra() -> None:
    """.ci/run lints and type-checks with the dev extra's tools: it bootstraps dev."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "scripts/bootstrap" in lines
    assert not [line for line in lines if line.startswith("scripts/bootstrap server")]
