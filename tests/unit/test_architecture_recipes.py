"""docs/architecture.md's recipes name every place a change touches.

Each recipe ("### Add an event", ...) lists files in backticks and names witnesses: things
that exist once per instance of what the recipe adds (an event type's name, a problem type's
member, a rule function). Every path a recipe names must exist, and every file of the product
that holds a witness must be one the recipe names (or lie in a folder it names): a place the
recipe forgot is where the next change would miss a copy.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "architecture.md"
# Files that describe or check the product rather than being it: a recipe need not name them.
NOT_PRODUCT = (
    "tests/",
    "client/node/test/",
    "docs/",
    "bench/",
    "chaos/",
    "examples/",
    "CHANGELOG.md",
    "README.md",
)
PATH = re.compile(r"`([\w./-]+/[\w.-]*|[\w-]+\.(?:py|sql|js|json|md|toml|yaml))`")
WITNESS = re.compile(r"^Witness: `([^`]+)`", re.MULTILINE)


@dataclass(frozen=True)
class Recipe:
    title: str
    text: str

    @property
    def paths(self) -> set[str]:
        return {match.rstrip("/") for match in PATH.findall(self.text)}

    @property
    def witnesses(self) -> list[str]:
        found = WITNESS.findall(self.text)
        assert found, f"recipe {self.title!r} names no witness"
        return found


def _recipes() -> list[Recipe]:
    section = GUIDE.read_text("utf-8").split("\n## Recipes\n", 1)[1].split("\n## ", 1)[0]
    parts = re.split(r"^### (.+)$", section, flags=re.MULTILINE)[1:]
    return [Recipe(title, text) for title, text in zip(parts[::2], parts[1::2], strict=True)]


def _product_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [path for path in listed if not path.startswith(NOT_PRODUCT)]


def _holding(witness: str) -> set[str]:
    found = set()
    for path in _product_files():
        try:
            text = (ROOT / path).read_text("utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        if witness in text:
            found.add(path)
    return found


def _covered(path: str, named: set[str]) -> bool:
    return any(path == place or path.startswith(place + "/") for place in named)


RECIPES = _recipes()


def test_the_guide_has_the_three_recipes() -> None:
    titles = {recipe.title for recipe in RECIPES}
    assert {"Add a problem type", "Add an event", "Change a rule"} <= titles


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda recipe: recipe.title)
def test_every_place_a_recipe_names_exists(recipe: Recipe) -> None:
    resolvable = {path for path in recipe.paths if "/" in path}
    missing = sorted(path for path in resolvable if not (ROOT / path).exists())
    assert not missing, f"{recipe.title}: no such place {missing}"


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda recipe: recipe.title)
def test_every_place_holding_an_instance_is_named(recipe: Recipe) -> None:
    for witness in recipe.witnesses:
        holding = _holding(witness)
        assert holding, f"{recipe.title}: the witness {witness!r} is nowhere: pick a live one"
        forgotten = sorted(path for path in holding if not _covered(path, recipe.paths))
        assert not forgotten, (
            f"{recipe.title}: {forgotten} hold {witness!r} but the recipe does not name them"
        )
