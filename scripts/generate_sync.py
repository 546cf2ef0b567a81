"""Generate the sync client, `client/tenure/_sync/`, from the async one, `client/tenure/_async/`.

    .venv/bin/python scripts/generate_sync.py          # rewrite the generated modules
    .venv/bin/python scripts/generate_sync.py --check  # name the stale ones (exit status 1)

Each module of `_async/` but `__init__.py` becomes the module of the same name in `_sync/`:
unasync drops `async` and `await` and renames by REPLACEMENTS (the `Async…` primitives of
`tenure._concurrency` become their blocking twins), `unwrap_awaitable` and DROPPED_LINES say
what renaming tokens cannot, and ruff sorts the imports (a module path renamed sorts elsewhere)
and formats the result. tests/unit/test_generated.py fails when a committed module differs.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import unasync  # type: ignore[import-untyped]  # ships no type hints

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "client" / "tenure" / "_async"
TARGET = ROOT / "client" / "tenure" / "_sync"

# Async name -> sync name, for every name that differs beyond unasync's own table.
REPLACEMENTS = {
    "_async": "_sync",
    "AsyncTenure": "Tenure",
    "AsyncLeaseHandle": "LeaseHandle",
    "AsyncRenewer": "Renewer",
    "AsyncHttpxSender": "HttpxSender",
    "_TaskHandle": "_ThreadHandle",
    "arun_once": "run_once",
    "arun_scheduled": "run_scheduled",
    "AsyncClient": "Client",
    "async_transport": "sync_transport",
    "handle_async_request": "handle_request",
    "AsyncBaseTransport": "BaseTransport",
    "aclose": "close",
    "AsyncExitStack": "ExitStack",
    "enter_async_context": "enter_context",
    "AsyncCondition": "Condition",
    "AsyncDeadline": "Deadline",
    "AsyncWorker": "Worker",
    "agather": "gather",
    "asleep": "sleep",
    "aread": "read",
    "aiter_lines": "iter_lines",
}
# `AsyncTenure.close = aclose` keeps the name every sync client has; renamed, it would read
# `close = close`.
DROPPED_LINES = re.compile(r"^ *close = close\n", re.MULTILINE)
HEADER = "# Generated from tenure/_async/{name} by scripts/generate_sync.py: edit that one.\n"


def unwrap_awaitable(text: str) -> str:
    """`Awaitable[X]` -> `X`: what a sync function returns is the value itself."""
    while (start := text.find("Awaitable[")) != -1:
        inner = end = start + len("Awaitable[")
        depth = 1
        while depth:  # to the bracket that closes `Awaitable[`
            depth += {"[": 1, "]": -1}.get(text[end], 0)
            end += 1
        text = text[:start] + text[inner : end - 1] + text[end:]
    return text


def _ruff(*arguments: str, text: str, path: Path) -> str:
    command = [sys.executable, "-m", "ruff", *arguments, "--stdin-filename", str(path), "-"]
    done = subprocess.run(command, input=text, capture_output=True, text=True, check=False)  # noqa: S603 - ruff on our own text
    if done.returncode != 0:
        raise RuntimeError(f"ruff {arguments[0]} failed on {path.name}: {done.stderr}")
    return done.stdout


def _finish(name: str, text: str) -> str:
    text = HEADER.format(name=name) + DROPPED_LINES.sub("", unwrap_awaitable(text))
    path = TARGET / name
    # F401: an import only the async flavor needs (`Awaitable`); I001: imports sorted again.
    text = _ruff("check", "--fix", "--select", "F401,I001", text=text, path=path)
    return _ruff("format", text=text, path=path)


def generate() -> dict[str, str]:
    """The modules `_sync/` should hold (but `__init__.py`), by file name."""
    rule = unasync.Rule("/_async/", "/_sync/", additional_replacements=REPLACEMENTS)
    names = sorted(path.name for path in SOURCE.glob("*.py") if path.name != "__init__.py")
    with tempfile.TemporaryDirectory() as scratch:
        copies = Path(scratch, "_async")
        copies.mkdir()
        for name in names:
            (copies / name).write_text((SOURCE / name).read_text())
        unasync.unasync_files([str(copies / name) for name in names], [rule])
        return {name: _finish(name, Path(scratch, "_sync", name).read_text()) for name in names}


def stale(generated: dict[str, str]) -> list[str]:
    """The modules of `_sync/` that differ from `generated`, or should not be there."""
    committed = {
        path.name: path.read_text() for path in TARGET.glob("*.py") if path.name != "__init__.py"
    }
    return sorted(
        name
        for name in generated.keys() | committed.keys()
        if generated.get(name) != committed.get(name)
    )


def main(arguments: list[str]) -> int:
    generated = generate()
    stale_names = stale(generated)
    if "--check" in arguments:
        for name in stale_names:
            sys.stdout.write(f"out of date: {TARGET / name}\n")
        return 1 if stale_names else 0
    for name in stale_names:
        path = TARGET / name
        if name in generated:
            path.write_text(generated[name])
            sys.stdout.write(f"wrote {path}\n")
        else:
            path.unlink()
            sys.stdout.write(f"removed {path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
