"""The docs agree with the code: every public name of `tenure` is in docs/client.md, every flag of
every `tenure` subcommand is documented beside its command, and each default the docs state for
a `TENURE_*` setting (in a table's default column, or in prose next to the setting's name) is
the one `Settings` has."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import tenure
from tenure._cli import _parser
from tenure_server.server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"`([^`\n]+)`")
SETTING = re.compile(r"`(TENURE_[A-Z0-9_]+)`")
# A value as the docs write one: `auto`, 4 s, 4000, 0.1, 30 min, unset.
VALUE = r"(`[^`]+`|\d+(?:\.\d+)?(?:\s?(?:ms|s|min|h|d)\b)?|unset)"
# Prose that names a setting and gives its default: "`TENURE_X` (4 s)", "(default 2, …)",
# "`TENURE_X`, 10 s by default", "`TENURE_X` defaults to 4 s", "`TENURE_X`: `auto`, the default".
PROSE = (
    re.compile(SETTING.pattern + r"\s+\((?:default\s+)?" + VALUE + r"\s*[,;)]"),
    re.compile(SETTING.pattern + r",\s+" + VALUE + r"\s+by default\b"),
    re.compile(SETTING.pattern + r",?\s+defaults?\s+to\s+" + VALUE),
    re.compile(SETTING.pattern + r":\s+" + VALUE + r",\s+the default\b"),
)
UNITS = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class Stated:
    """A default the docs state for a setting, and where."""

    setting: str
    value: str
    where: str
    in_table: bool


def code_in(text: str) -> str:
    """The text of the fenced blocks and inline code spans of a Markdown text."""
    blocks = FENCED.findall(text)
    return "\n".join([*blocks, *INLINE.findall(FENCED.sub("", text))])


def chunks(text: str) -> list[str]:
    """A Markdown text's fenced code blocks (each whole) and paragraphs (blank-line separated)."""
    blocks = FENCED.findall(text)
    prose = FENCED.sub("\n\n", text)
    return [*blocks, *(part for part in re.split(r"\n\s*\n", prose) if part.strip())]


def table_defaults(text: str, where: str) -> Iterator[Stated]:
    """Defaults in the `default` column of the tables whose first column names settings; a row
    `A` / `B` | `1` / `2` gives one per name."""
    column: int | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("|"):
            column = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if column is None:
            column = cells.index("default") if "default" in cells else -1
            continue
        names = SETTING.findall(cells[0])
        if column < 1 or not names or set(cells[column]) <= set("-: "):
            continue
        values = cells[column].split(" / ")
        assert len(values) in (1, len(names)), f"{where}:{number}: {len(names)} names, {values}"
        for name, value in zip(names, values * len(names), strict=False):
            yield Stated(name, value.strip(), f"{where}:{number}", in_table=True)


def prose_defaults(text: str, where: str) -> Iterator[Stated]:
    """Defaults stated in prose right after a setting's name (see PROSE)."""
    flat = re.sub(r"\s*\n\s*", " ", FENCED.sub("", text))
    for pattern in PROSE:
        for match in pattern.finditer(flat):
            yield Stated(
                match.group(1), match.group(2), f"{where}: {match.group(0)!r}", in_table=False
            )


def stated_defaults() -> list[Stated]:
    stated: list[Stated] = []
    for path in DOCS:
        text = path.read_text("utf-8")
        where = str(path.relative_to(ROOT))
        stated += [*table_defaults(text, where), *prose_defaults(text, where)]
    return stated


def env_name(field: str) -> str:
    return "TENURE_" + field.upper()


def code_default(setting: str) -> Any:
    fields = {env_name(name): field for name, field in Settings.model_fields.items()}
    return fields[setting].get_default(call_default_factory=True)


def agrees(setting: str, written: str, default: Any) -> bool:
    """Whether `written` (as the docs write a value) means the code's `default`."""
    text = written.strip()
    literal = text.strip("`").split(" (")[0].strip("`")
    if default is None:
        return text == "unset"
    if isinstance(default, bool):
        return literal == str(default).lower()
    if isinstance(default, int | float):
        number = re.fullmatch(r"(\d+(?:\.\d+)?)\s?(ms|s|min|h|d)?", literal)
        if number is None:
            return False
        value = float(number.group(1))
        if number.group(2) is not None:
            seconds = value * UNITS[number.group(2)]
            value = seconds * 1000 if setting.endswith("_MS") else seconds
        return math.isclose(value, float(default))
    if isinstance(default, list):
        return literal == "[]" and default == []
    return literal == str(default)


def subcommands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (sub)command of the `tenure` parser with its words: ("token", "new"), …"""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from subcommands(child, (*path, name))


def flags(parser: argparse.ArgumentParser) -> list[str]:
    return [
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    ]


def test_every_public_name_is_in_the_client_docs() -> None:
    """Each name in `tenure.__all__` is written as code (a span or a block) in docs/client.md."""
    written = set(re.findall(r"\w+", code_in((ROOT / "docs/client.md").read_text("utf-8"))))
    assert [name for name in tenure.__all__ if name not in written] == []


def test_every_client_method_is_in_the_client_docs() -> None:
    """Each public method and property of the clients and lease handles is named in
    docs/client.md's code."""
    written = set(re.findall(r"\w+", code_in((ROOT / "docs/client.md").read_text("utf-8"))))
    classes = (tenure.Tenure, tenure.AsyncTenure, tenure.LeaseHandle, tenure.AsyncLeaseHandle)
    public = {name for cls in classes for name in dir(cls) if not name.startswith("_")}
    assert sorted(public - written) == []


def test_every_error_is_in_the_client_docs_error_tree() -> None:
    """docs/client.md's tree of errors holds every exception `tenure` exports that derives from
    TenureError, under its own base class."""
    text = (ROOT / "docs/client.md").read_text("utf-8")
    tree = next(block for block in FENCED.findall(text) if block.startswith("TenureError"))
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in tree.splitlines():
        match = re.match(r"^([│├└─\s]*)([A-Z]\w+)", line)
        assert match is not None, line
        depth = len(match.group(1))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parents[match.group(2)] = stack[-1][1]
        stack.append((depth, match.group(2)))
    errors = {
        name: value
        for name, value in vars(tenure).items()
        if name in tenure.__all__
        and isinstance(value, type)
        and issubclass(value, tenure.TenureError)
        and value is not tenure.TenureError
    }
    assert parents == {name: error.__bases__[0].__name__ for name, error in errors.items()}


def test_every_cli_flag_is_documented_beside_its_command() -> None:
    """For each `tenure` subcommand and each of its flags, some paragraph or code block of the
    docs names `tenure <subcommand>` and the flag."""
    blocks = [chunk for path in DOCS for chunk in chunks(path.read_text("utf-8"))]
    missing: list[str] = []
    for words, parser in subcommands(_parser()):
        if not words:
            continue
        command = "tenure " + " ".join(words)
        beside = [block for block in blocks if re.search(re.escape(command) + r"(?![\w-])", block)]
        if not beside:
            missing.append(command)
        for flag in flags(parser):
            pattern = re.compile(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])")
            if not any(pattern.search(block) for block in beside):
                missing.append(f"{command} {flag}")
    assert missing == []


def test_the_docs_state_each_setting_with_its_default() -> None:
    """Every setting is in a table of defaults, and every default stated for it — in a table or
    in prose after its name — is the code's (`4 s` and `4000` both mean 4000 ms)."""
    stated = stated_defaults()
    settings = {env_name(name) for name in Settings.model_fields}
    tabled = {one.setting for one in stated if one.in_table}
    assert sorted(settings - tabled) == []
    assert sorted(tabled - settings) == []  # a misspelt or removed setting
    wrong = [
        f"{one.where}: {one.setting} = {one.value}, code: {code_default(one.setting)!r}"
        for one in stated
        if one.setting in settings and not agrees(one.setting, one.value, code_default(one.setting))
    ]
    assert wrong == []
    # The parser still finds what the docs state (a parser that finds nothing agrees with all).
    assert sum(not one.in_table for one in stated) >= 5


@pytest.mark.parametrize(
    ("prose", "value"),
    [
        ("`TENURE_STATEMENT_TIMEOUT_MS` (5 s) and `TENURE_LOCK_TIMEOUT_MS` (2 s) turn", "2 s"),
        ("At most `TENURE_LOCK_TIMEOUT_MS` (default 2000, never more", "2000"),
        ("waits (`TENURE_LOCK_TIMEOUT_MS`, 2 s by default). When", "2 s"),
        ("the lock timeout, `TENURE_LOCK_TIMEOUT_MS`, defaults to\n2 s.", "2 s"),
    ],
)
def test_prose_stating_a_wrong_default_is_caught(prose: str, value: str) -> None:
    """The prose forms the docs use are read, and 2 s for the 4 s lock timeout disagrees."""
    found = [one for one in prose_defaults(prose, "x") if one.setting == "TENURE_LOCK_TIMEOUT_MS"]
    assert [one.value for one in found] == [value]
    assert not agrees(found[0].setting, found[0].value, code_default(found[0].setting))
    assert agrees(found[0].setting, "4 s", code_default(found[0].setting))


def test_a_table_stating_a_wrong_default_is_caught() -> None:
    """A defaults table's row, also one naming two settings, is read per setting."""
    table = (
        "| variable | default | meaning |\n| --- | --- | --- |\n"
        "| `TENURE_LOCK_TIMEOUT_MS` | `2000` | lock |\n"
        "| `TENURE_POOL_MIN_SIZE` / `TENURE_POOL_MAX_SIZE` | `2` / `10` | pool |\n"
    )
    found = {one.setting: one.value for one in table_defaults(table, "x")}
    assert found == {
        "TENURE_LOCK_TIMEOUT_MS": "`2000`",
        "TENURE_POOL_MIN_SIZE": "`2`",
        "TENURE_POOL_MAX_SIZE": "`10`",
    }
    assert not agrees("TENURE_LOCK_TIMEOUT_MS", "`2000`", 4000)
