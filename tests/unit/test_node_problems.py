"""The Node.js client's problems.js is generated from the one catalogue and is current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_node_catalogue_is_current() -> None:
    """scripts/generate_node_problems.py --check: client/node/lib/problems.js is what the
    catalogue (tenure.problems) generates today, one Error subclass per problem type."""
    command = [sys.executable, str(ROOT / "scripts" / "generate_node_problems.py"), "--check"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
