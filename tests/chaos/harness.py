"""One run of the harness from a test, through its command line: its exit status, figures,
printed summary (kept in the CI log) and wall time."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from chaos import run


@dataclass(frozen=True)
class Ran:
    status: int
    summary: dict[str, Any]
    printed: str
    wall: float


def run_harness(argv: list[str], run_dir: Path, capsys: pytest.CaptureFixture[str]) -> Ran:
    figures = run_dir.parent / "figures.json"
    began = time.monotonic()
    status = run.main([*argv, "--run-dir", str(run_dir), "--json", str(figures)])
    wall = time.monotonic() - began
    printed = capsys.readouterr().out
    with capsys.disabled():  # the summary table stays in the CI log
        print(printed)
    return Ran(status, json.loads(figures.read_text(encoding="utf-8")), printed, wall)
