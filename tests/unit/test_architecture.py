"""The import graph holds the shape the contracts in pyproject.toml describe, and those contracts
cover the whole package: a new module cannot sit outside the layers, and a new private client
module cannot slip past the rule that the service uses only the client's public API."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path
from typing import Any

import tenure
import tenure_server

ROOT = Path(__file__).resolve().parents[2]


def _contract(name_start: str) -> dict[str, Any]:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contracts: list[dict[str, Any]] = settings["contracts"]
    return next(c for c in contracts if c["name"].startswith(name_start))


def _modules(package: Any) -> list[str]:
    return [
        module.name for module in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    ]


def test_every_service_module_lies_in_a_layer() -> None:
    # A layer of independent packages is written "a | b".
    layers = [
        package.strip()
        for layer in _contract("Service layers")["layers"]
        for package in layer.split("|")
    ]
    outside = [
        module
        for module in _modules(tenure_server)
        if not any(module == layer or module.startswith(layer + ".") for layer in layers)
    ]
    assert outside == []


def test_the_service_is_forbidden_every_private_client_module() -> None:
    forbidden: list[str] = _contract("The service uses only the client's public")[
        "forbidden_modules"
    ]
    private = [
        module
        for module in _modules(tenure)
        if any(part.startswith("_") for part in module.split(".")[1:])
    ]
    assert sorted(private) == sorted(forbidden)


MAX_MODULE_LINES = 400
SOURCE_FOLDERS = ("client", "service", "tests", "chaos", "bench", "scripts", "examples")


def test_no_module_is_over_400_lines() -> None:
    """A module that size holds more than its name says: split it by what it holds."""
    sources = [
        path
        for folder in SOURCE_FOLDERS
        for pattern in ("*.py", "*.sql")
        for path in (ROOT / folder).rglob(pattern)
        if ".venv" not in path.parts
    ]
    assert sources
    too_long = {
        str(path.relative_to(ROOT)): lines
        for path in sources
        if (lines := len(path.read_text("utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert too_long == {}
