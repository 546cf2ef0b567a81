"""The public surface of `tenure`: `__all__` lists exactly the public names, they present
themselves as `tenure.X`, and the package imports with nothing but httpx (and `Tenure`'s
transport, pyreqwest) installed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import pytest

import tenure

CLIENT_SOURCES = Path(__file__).resolve().parents[2] / "client"
# What `Tenure` needs: httpx, and its default transport (pyreqwest, no dependencies of its own).
CLIENT_PARTS = ("httpx", "pyreqwest")
# A virtualenv with those and nothing else, built once and reused by later runs.
HTTPX_ONLY_VENV = Path(tempfile.gettempdir()) / f"tenure-{'-'.join(CLIENT_PARTS)}-only-venv"
FORBIDDEN = ("tenure_server", "fastapi", "asyncpg", "pydantic", "pgserver", "uvicorn", "cronsim")


def test_all_lists_exactly_the_public_names() -> None:
    """Every public attribute is in `__all__` and everything in `__all__` exists, once."""
    public = {
        name
        for name, value in vars(tenure).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(tenure.__all__) - {"__version__"}
    assert len(tenure.__all__) == len(set(tenure.__all__))
    for name in tenure.__all__:
        assert hasattr(tenure, name), name


def test_public_names_live_in_tenure() -> None:
    """Classes and functions re-exported from private modules say `tenure`, not `tenure._x`."""
    for name in tenure.__all__:
        value = getattr(tenure, name)
        if isinstance(value, type | types.FunctionType):
            # A public module's own names (tenure.schedule's) may say that module.
            package, _, module = value.__module__.partition(".")
            assert package == "tenure", name
            assert not module.startswith("_"), (name, value.__module__)


def _httpx_only_python() -> Path:
    python = HTTPX_ONLY_VENV / "bin" / "python"
    ready = HTTPX_ONLY_VENV / ".ready"
    if not ready.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(HTTPX_ONLY_VENV)], check=True)
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                *CLIENT_PARTS,
            ],
            check=True,
            timeout=240,
        )
        ready.touch()
    return python


PROBE = f"""
import importlib.util, sys
for missing in {FORBIDDEN!r}:
    assert importlib.util.find_spec(missing) is None, missing + " is installed in this venv"
import tenure
loaded = sorted(set(sys.modules) & set({FORBIDDEN!r}))
assert not loaded, loaded
client = tenure.Tenure("http://127.0.0.1:9", holder="probe")
client.close()
assert tenure.parse_token(tenure.format_token("job", 7)) == ("job", 7)
print("ok", len(tenure.__all__))
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_import_works_with_only_httpx_installed() -> None:
    """In a virtualenv holding only httpx and pyreqwest, `import tenure` works, loads no service
    module, and makes a `Tenure`."""
    python = _httpx_only_python()
    environment = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(CLIENT_SOURCES)}
    result = subprocess.run(
        [str(python), "-c", PROBE], env=environment, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")
