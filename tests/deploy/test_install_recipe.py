"""The image's install recipe, run outside Docker: build the wheel from the repository, install
`tenure[server]` from it into a fresh virtual environment, start `tenure serve` and wait until it
is live and ready. A broken recipe (missing package data, a dependency left out of the server
extra, a console script that does not start) fails here instead of in an image build."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import venv
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.processes import free_port, running, tenure_command, without_tenure_settings

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_SECONDS = 90.0
INSTALL_TIMEOUT_SECONDS = 420
STOPPED_BY_SIGTERM = {0, 128 + signal.SIGTERM, -signal.SIGTERM}


def _run(*command: str | Path, timeout: float = INSTALL_TIMEOUT_SECONDS) -> str:
    result = subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=_clean_environment(),
    )
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _clean_environment() -> dict[str, str]:
    """This environment without TENURE_* settings and without the outer virtualenv."""
    environment = {
        name: value
        for name, value in without_tenure_settings().items()
        if name not in {"VIRTUAL_ENV", "PYTHONPATH"}
    }
    environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return environment


def _fresh_venv(folder: Path) -> Path:
    """A new virtualenv with pip and nothing else; returns its bin folder."""
    venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    return folder / "bin"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel --no-deps` builds from this repository, as the image's builder does."""
    out = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", out, ROOT)
    (built,) = out.glob("tenure-*.whl")
    return built


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A short folder under /tmp: the embedded server's unix socket path must stay short."""
    folder = Path(tempfile.mkdtemp(prefix="tn", dir="/tmp"))
    yield folder / "pgdata"
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.timeout(INSTALL_TIMEOUT_SECONDS + 180)
def test_wheel_with_server_extra_installs_and_serves(
    wheel: Path, tmp_path: Path, data_dir: Path
) -> None:
    """`tenure[server]` from the built wheel installs into a fresh venv, and `tenure serve` from
    it answers 200 on /healthz and /readyz, then stops cleanly on SIGTERM."""
    bin_dir = _fresh_venv(tmp_path / "venv")
    _run(bin_dir / "python", "-m", "pip", "install", f"tenure[server] @ {wheel.as_uri()}")

    port = free_port()
    environment = _clean_environment() | {"TENURE_DATA_DIR": str(data_dir)}
    command = tenure_command(port, "--host", "127.0.0.1", tenure=bin_dir / "tenure")
    log = tmp_path / "serve.log"
    with log.open("wb") as output:
        try:
            # In tmp_path, so that nothing is imported from this repository.
            with running(
                command,
                port,
                env=environment,
                output=output,
                ready_timeout=START_TIMEOUT_SECONDS,
                cwd=tmp_path,
            ) as server:
                assert httpx.get(f"{server.url}/healthz", timeout=2.0).status_code == 200
        except (RuntimeError, TimeoutError) as error:
            pytest.fail(f"{error}:\n{log.read_text()}")
    returncode = server.process.returncode
    text = log.read_text()
    # uvicorn exits with 128 + SIGTERM after a graceful shutdown; what matters is that it was one.
    assert returncode in STOPPED_BY_SIGTERM, text
    assert "Application shutdown complete" in text, text
    assert not (data_dir / "postmaster.pid").exists(), "the embedded PostgreSQL was left running"


@pytest.mark.timeout(INSTALL_TIMEOUT_SECONDS)
def test_client_imports_with_httpx_alone(wheel: Path, tmp_path: Path) -> None:
    """With only httpx and the wheel (no extras, no other dependencies) `import tenure` works,
    and `tenure serve` says that the server extra is missing instead of a traceback."""
    bin_dir = _fresh_venv(tmp_path / "venv")
    _run(bin_dir / "python", "-m", "pip", "install", "httpx")
    _run(bin_dir / "python", "-m", "pip", "install", "--no-deps", wheel)

    _run(bin_dir / "python", "-c", "import tenure")
    result = subprocess.run(
        [str(bin_dir / "tenure"), "serve"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=_clean_environment(),
        cwd=tmp_path,
    )
    assert result.returncode != 0
    assert "tenure[server]" in result.stderr
    assert "Traceback" not in result.stderr
