"""The sync client is generated from the async one: the committed `tenure/_sync/` modules are
what scripts/generate_sync.py makes of `tenure/_async/` now."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "generate_sync.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_sync", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_sync_modules_are_generated_from_the_async_ones() -> None:
    """Every `_sync/` module equals its generation from `_async/` (run scripts/generate_sync.py)."""
    script = _script()
    generated: dict[str, str] = script.generate()
    assert generated
    stale: list[str] = script.stale(generated)
    assert stale == []


def test_awaitable_is_unwrapped_to_the_value_it_gives() -> None:
    """`Awaitable[X]`, nested brackets included, becomes `X` in the sync code."""
    unwrap = _script().unwrap_awaitable
    assert unwrap("Callable[..., Awaitable[RunResult[T]]]") == "Callable[..., RunResult[T]]"
    assert unwrap("Awaitable[int] | Awaitable[str]") == "int | str"
