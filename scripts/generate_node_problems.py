"""Write client/node/lib/problems.js from the one catalogue, `tenure.problems.ProblemType`: the
Node.js client's table of problem types and one `Error` subclass per type.

    .venv/bin/python scripts/generate_node_problems.py          # rewrite the file
    .venv/bin/python scripts/generate_node_problems.py --check  # exit 1 when it is out of date

The facts (extension members) each type carries are listed here, as the Python client's
decoders (`tenure._error_answers`) read them; tests/unit/test_node_problems.py keeps the file
current and the list complete.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from generated_file import write_or_check

from tenure.problems import MEDIA_TYPE, TYPE_PREFIX, ProblemType

TARGET = Path(__file__).resolve().parent.parent / "client" / "node" / "lib" / "problems.js"

# The class of a type, where it is not the member's name in PascalCase (the Python client's).
NAMES = {ProblemType.VALIDATION_ERROR: "InvalidRequest"}
# Base classes other than TenureError: a 503 of any kind is retried as ServiceUnavailable.
PARENTS = {
    ProblemType.STORAGE_UNAVAILABLE: "ServiceUnavailable",
    ProblemType.SHUTTING_DOWN: "ServiceUnavailable",
    ProblemType.TOO_MANY_STREAMS: "ServiceUnavailable",
    ProblemType.HOLDING_OF_ANOTHER_PRINCIPAL: "Forbidden",
    ProblemType.RESERVED_NAME: "Forbidden",
}
# The facts of each type: (member, property, kind). Kinds are those of `fact` in errors.js:
# a trailing "?" makes a fact optional (absent or null reads as null).
FACTS: dict[ProblemType, list[tuple[str, str, str]]] = {
    ProblemType.VALIDATION_ERROR: [("errors", "errors", "array?")],
    ProblemType.LEASE_HELD: [("holder", "holder", "string"), ("expires_at", "expiresAt", "string")],
    ProblemType.LEASE_LOST: [("generation", "generation", "generation?")],
    ProblemType.GENERATION_EXHAUSTED: [("generation", "generation", "generation?")],
    ProblemType.WINDOW_COMPLETED: [("completed_at", "completedAt", "string")],
    ProblemType.WINDOW_LEASE_MISMATCH: [("lease", "lease", "string")],
    ProblemType.WINDOW_NOT_DUE: [("occurrence", "occurrence", "string"), ("now", "now", "string")],
    ProblemType.STALE_GENERATION: [("highest", "highest", "generation")],
    ProblemType.FENCE_LEASE_MISMATCH: [("lease", "lease", "string")],
    ProblemType.UNKNOWN_GENERATION: [("current_generation", "currentGeneration", "generation?")],
    ProblemType.TOO_MANY_STREAMS: [("limit", "limit", "number?"), ("per", "per", "string?")],
    ProblemType.RESERVED_NAME: [("name", "name", "string?")],
}
JSDOC = {
    "string": "string",
    "string?": "string | null",
    "number?": "number | null",
    "generation": "number",
    "generation?": "number | null",
    "array?": "Array<{field: string, message: string}> | null",
}


def class_name(kind: ProblemType) -> str:
    return NAMES.get(kind) or "".join(part.capitalize() for part in kind.name.split("_"))


def _comment(text: str) -> str:
    lines = textwrap.wrap(text, 94)
    return "/**\n" + "".join(f" * {line}\n" for line in lines) + " */\n"


def _class(kind: ProblemType) -> str:
    parent = PARENTS.get(kind, "TenureError")
    body = [
        f"  static slug = {json.dumps(kind.slug)};",
        f"  static status = {kind.status};",
        f"  static title = {json.dumps(kind.title)};",
    ]
    facts = FACTS.get(kind, [])
    if facts:
        body.append("  /** @param {string} detail @param {ErrorOptions} [options] */")
        body.append("  constructor(detail, options) {")
        body.append("    super(detail, options);")
        for member, prop, fact_kind in facts:
            body.append(f"    /** @type {{{JSDOC[fact_kind]}}} */")
            arguments = f"{json.dumps(member)}, {json.dumps(fact_kind)}"
            body.append(f"    this.{prop} = fact(this.problem, {arguments});")
        body.append("  }")
    return _comment(kind.description) + (
        f"export class {class_name(kind)} extends {parent} {{\n" + "\n".join(body) + "\n}\n"
    )


def render() -> str:
    catalogue = {
        kind.slug: {"status": kind.status, "title": kind.title, "description": kind.description}
        for kind in ProblemType
    }
    classes = "\n".join(_class(kind) for kind in ProblemType)
    names = "".join(f"  {json.dumps(kind.slug)}: {class_name(kind)},\n" for kind in ProblemType)
    return (
        "// Generated from tenure.problems by scripts/generate_node_problems.py: do not edit.\n"
        'import { TenureError, ServiceUnavailable, fact } from "./errors.js";\n\n'
        "/** @typedef {import('./errors.js').ErrorOptions} ErrorOptions */\n"
        "/** @typedef {{status: number, title: string, description: string}} Problem */\n\n"
        f"export const MEDIA_TYPE = {json.dumps(MEDIA_TYPE)};\n"
        f"export const TYPE_PREFIX = {json.dumps(TYPE_PREFIX)};\n\n"
        "/**\n * Every problem type of Tenure by slug: its HTTP status, title and description.\n"
        " * @type {Readonly<Record<string, Problem>>}\n"
        " */\n"
        f"export const PROBLEMS = Object.freeze({json.dumps(catalogue, indent=2)});\n\n"
        f"{classes}\n"
        "/**\n * The error class of each problem type, by slug.\n"
        " * @type {Readonly<Record<string, typeof TenureError>>}\n */\n"
        f"export const ERROR_CLASSES = Object.freeze({{\n{names}}});\n"
    )


def main(argv: list[str]) -> int:
    return write_or_check(TARGET, render(), argv, "make node")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
