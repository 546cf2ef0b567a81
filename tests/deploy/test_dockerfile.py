"""The image recipe's properties, read from the Dockerfile and .dockerignore without a Docker
engine: multi-stage, pinned bases, non-root, health check, `tenure serve`, no secrets or compilers
in the runtime image, and a build context that leaves out local state."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tenure_server.server.cli import ConfigurationError, serving_settings
from tenure_server.server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"

EXACT_VERSION_TAG = re.compile(r"^\d+\.\d+\.\d+(?:-[a-z0-9.-]+)?$")
SECRET_NAME = re.compile(r"TOKEN|PASSWORD|PASSWD|SECRET|API_?KEY|PRIVATE_KEY|DATABASE_URL", re.I)
COMPILERS = re.compile(
    r"\b(gcc|g\+\+|clang|cc|c\+\+|make|build-essential|cmake|rustc|cargo|"
    r"[a-z0-9.+-]+-dev|libpq-dev|python3-dev)\b"
)


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [i.arguments for i in self.instructions if i.keyword == keyword]


def instructions(text: str) -> list[Instruction]:
    """Joins continued lines and drops comments, like Docker's parser (without heredocs)."""
    parsed: list[Instruction] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # comments inside a continued instruction are dropped
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = pending + line
        pending = ""
        keyword, _, arguments = whole.partition(" ")
        parsed.append(Instruction(keyword.upper(), arguments.strip()))
    assert not pending, "the Dockerfile ends inside a continued instruction"
    return parsed


def stages(text: str) -> list[Stage]:
    found: list[Stage] = []
    for instruction in instructions(text):
        if instruction.keyword == "FROM":
            words = [w for w in instruction.arguments.split() if not w.startswith("--")]
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            found.append(Stage(base=words[0], name=name))
        elif found:
            found[-1].instructions.append(instruction)
    return found


def environment(stage: Stage) -> dict[str, str]:
    """ENV and ARG of a stage as name → value ('' for an ARG without a default)."""
    values: dict[str, str] = {}
    for keyword in ("ENV", "ARG"):
        for arguments in stage.all(keyword):
            words = shlex.split(arguments)
            if keyword == "ENV" and len(words) >= 2 and "=" not in words[0]:
                values[words[0]] = " ".join(words[1:])  # the legacy `ENV NAME value` form
                continue
            for word in words:
                name, _, value = word.partition("=")
                values[name] = value
    return values


def exec_form(arguments: str) -> list[str]:
    value = json.loads(arguments)
    assert isinstance(value, list), f"not the exec (JSON) form: {arguments}"
    return [str(item) for item in value]


@pytest.fixture(scope="module")
def parsed() -> list[Stage]:
    return stages(DOCKERFILE.read_text("utf-8"))


@pytest.fixture(scope="module")
def final(parsed: list[Stage]) -> Stage:
    return parsed[-1]


def test_parser_reads_continuations_and_both_env_forms() -> None:
    """The little parser joins continued lines and reads `ENV a=b` and `ENV a b` alike."""
    text = "FROM x:1.2.3 AS b\n# note\nENV A=1 \\\n    B=2\nENV C three words\nRUN a \\\n  b\n"
    (stage,) = stages(text)
    assert stage.name == "b"
    assert environment(stage) == {"A": "1", "B": "2", "C": "three words"}
    assert stage.all("RUN") == ["a  b"]


def test_build_has_a_builder_and_a_runtime_stage(parsed: list[Stage]) -> None:
    """The wheel is built in one stage and the image runs from another."""
    assert len(parsed) >= 2
    assert parsed[0].name, "the builder stage is named, so later stages copy from it by name"


def test_base_images_are_pinned_to_exact_versions(parsed: list[Stage]) -> None:
    """Every base image names an exact version tag (optionally a digest), never `latest`."""
    names = {stage.name for stage in parsed if stage.name}
    for stage in parsed:
        if stage.base in names:
            continue
        image, _, digest = stage.base.partition("@")
        repository, colon, tag = image.rpartition(":")
        assert colon, f"{stage.base} has no tag"
        assert "/" not in tag, f"{stage.base} has no tag"
        assert tag != "latest"
        version = tag.split("-", 1)[0]
        assert EXACT_VERSION_TAG.match(version), f"{stage.base}: {tag!r} is not an exact version"
        assert not digest or re.fullmatch(r"sha256:[0-9a-f]{64}", digest)
        assert repository


def test_runtime_and_builder_share_the_interpreter(parsed: list[Stage], final: Stage) -> None:
    """The venv copied from the builder points at the runtime's own interpreter path."""
    assert final.base == parsed[0].base
    assert "slim" in final.base, "the runtime base is a slim image (no compilers)"


def test_runtime_stage_runs_as_a_numeric_non_root_user(final: Stage) -> None:
    """The last USER of the runtime stage is a numeric, non-root UID (Kubernetes can verify it)."""
    users = final.all("USER")
    assert users, "the runtime stage sets USER"
    user, _, group = users[-1].partition(":")
    assert user.isdigit()
    assert int(user) >= 1000
    assert not group or (group.isdigit() and int(group) != 0)


def test_entrypoint_runs_tenure_serve_on_all_interfaces(final: Stage) -> None:
    """`docker run IMAGE` starts `tenure serve`, listening on 0.0.0.0:8080, one process."""
    entrypoint = exec_form(final.all("ENTRYPOINT")[-1])
    command = exec_form(final.all("CMD")[-1])
    assert (entrypoint + command)[:2] == ["tenure", "serve"]
    env = environment(final)
    assert env.get("TENURE_HOST") == "0.0.0.0"
    assert env.get("TENURE_WORKERS", "1") == "1"
    assert "8080" in " ".join(final.all("EXPOSE")).split()


def test_the_image_does_not_serve_without_authentication(
    final: Stage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The image listens on 0.0.0.0 and never turns authentication off by itself: with only a
    database URL `tenure serve` refuses to start, naming TENURE_TOKENS_FILE; given a tokens
    file, or the explicit allowance, it starts."""
    for name in Settings.model_fields:
        monkeypatch.delenv(f"TENURE_{name.upper()}", raising=False)
    image = {
        name: value for name, value in environment(final).items() if name.startswith("TENURE_")
    }
    assert "TENURE_ALLOW_UNAUTHENTICATED_REMOTE" not in image
    for name, value in (image | {"TENURE_DATABASE_URL": "postgresql://tenure@db/tenure"}).items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match="TENURE_TOKENS_FILE"):
        serving_settings(None, None, None)
    monkeypatch.setenv("TENURE_TOKENS_FILE", "/etc/tenure/tokens.toml")
    assert serving_settings(None, None, None).auth_configured
    monkeypatch.delenv("TENURE_TOKENS_FILE")
    monkeypatch.setenv("TENURE_ALLOW_UNAUTHENTICATED_REMOTE", "true")
    assert serving_settings(None, None, None).host == "0.0.0.0"


def test_healthcheck_asks_healthz_without_curl(final: Stage) -> None:
    """The HEALTHCHECK probes /healthz with the interpreter; the image ships no curl or wget."""
    checks = final.all("HEALTHCHECK")
    assert checks
    assert "NONE" not in checks[-1].upper()
    assert "/healthz" in checks[-1]
    assert not re.search(r"\b(curl|wget)\b", checks[-1])
    command = exec_form(checks[-1].split("CMD", 1)[1].strip())
    assert command[:2] == ["python", "-c"]
    compile(command[2], "<healthcheck>", "exec")  # the inline program is valid Python


def test_no_secrets_in_env_or_args(parsed: list[Stage]) -> None:
    """No ENV or ARG that looks like a credential carries a value in any stage."""
    for stage in parsed:
        for name, value in environment(stage).items():
            if SECRET_NAME.search(name):
                assert not value, f"{name} has a value baked into the image"


def test_pip_keeps_no_cache_in_layers(parsed: list[Stage]) -> None:
    """Every pip install runs with the cache off (PIP_NO_CACHE_DIR=1 or --no-cache-dir)."""
    for stage in parsed:
        cache_off = environment(stage).get("PIP_NO_CACHE_DIR", "").lower() in {"1", "true", "on"}
        for run in stage.all("RUN"):
            if re.search(r"pip3? install", run):
                assert cache_off or "--no-cache-dir" in run, run


def test_builder_installs_the_built_wheel_with_the_server_extra(parsed: list[Stage]) -> None:
    """The builder runs the recipe test_install_recipe.py checks: wheel, then tenure[server]."""
    runs = " ".join(parsed[0].all("RUN"))
    assert "pip wheel --no-deps" in runs
    assert '"tenure[server] @ file://' in runs
    assert "python -m venv /opt/venv" in runs


def test_runtime_gets_only_the_venv(final: Stage) -> None:
    """The runtime stage copies the venv from the builder and never the build context."""
    copies = final.all("COPY")
    assert any(c.startswith("--from=") and "/opt/venv" in c for c in copies)
    for copy in copies:
        assert copy.startswith("--from="), f"runtime stage copies from the context: {copy}"
    assert not final.all("ADD")
    assert "/opt/venv/bin" in environment(final).get("PATH", "")


def test_runtime_installs_no_compilers(final: Stage) -> None:
    """No RUN in the runtime stage installs a compiler, build tool or -dev package."""
    for run in final.all("RUN"):
        if re.search(r"apt-get install|apk add|pip3? install", run):
            assert not COMPILERS.search(run), run


def _pattern(rule: str) -> re.Pattern[str]:
    """A .dockerignore rule as a regex over slash-separated paths (Go filepath.Match + `**`)."""
    rule = rule.strip("/")
    out = ""
    index = 0
    while index < len(rule):
        if rule.startswith("**/", index):
            out, index = out + "(?:.*/)?", index + 3
        elif rule.startswith("**", index):
            out, index = out + ".*", index + 2
        elif rule[index] == "*":
            out, index = out + "[^/]*", index + 1
        elif rule[index] == "?":
            out, index = out + "[^/]", index + 1
        elif rule[index] == "[":
            end = rule.index("]", index)
            out, index = out + rule[index : end + 1], end + 1
        else:
            out, index = out + re.escape(rule[index]), index + 1
    return re.compile(out + r"\Z")


def ignored(path: str, rules: list[str]) -> bool:
    """Docker's semantics: the last rule matching the path or one of its parents decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for rule in rules:
        negated = rule.startswith("!")
        pattern = _pattern(rule[1:] if negated else rule)
        if any(pattern.match(prefix) for prefix in prefixes):
            excluded = not negated
    return excluded


@pytest.fixture(scope="module")
def ignore_rules() -> list[str]:
    lines = DOCKERIGNORE.read_text("utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize(
    "path",
    [
        ".git/HEAD",
        ".venv/bin/python",
        "tests/conftest.py",
        ".pytest_cache/v/cache/nodeids",
        ".mypy_cache/3.11/x.json",
        ".ruff_cache/content",
        "client/tenure/__pycache__/_cli.cpython-312.pyc",
        "service/tenure_server/.pytest_cache/x",
        ".tenure/pgdata/PG_VERSION",
        "service/.env",
        "dist/tenure-0.1.0-py3-none-any.whl",
        "helm/tenure/values.yaml",
    ],
)
def test_dockerignore_keeps_local_state_out(path: str, ignore_rules: list[str]) -> None:
    """VCS data, virtualenvs, tests, caches and local databases never enter the build context."""
    assert ignored(path, ignore_rules)


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "README.md",
        "client/tenure/__init__.py",
        "service/tenure_server/server/cli.py",
    ],
)
def test_dockerignore_keeps_what_the_wheel_needs(path: str, ignore_rules: list[str]) -> None:
    """The package metadata and both source folders stay in the context."""
    assert not ignored(path, ignore_rules)


def test_dockerfile_copies_only_files_the_context_keeps(
    parsed: list[Stage], ignore_rules: list[str]
) -> None:
    """Every COPY source of the builder exists in the repository and survives .dockerignore."""
    for copy in parsed[0].all("COPY"):
        sources = [w for w in copy.split() if not w.startswith("--")][:-1]
        for source in sources:
            assert (ROOT / source).exists(), source
            assert not ignored(source.rstrip("/"), ignore_rules), source
