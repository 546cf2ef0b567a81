"""The `tenure` command.

`tenure run` needs only the client; `serve` and `migrate` are the service's commands and need
`tenure[server]`.

    tenure run JOB --ttl 90 [--cron EXPR --tz ZONE [--key previous_day] | --window KEY]
               [--wait S] [--grace S] [--url URL] [--register] -- COMMAND ARGS…
    tenure status [--url URL] [--watch [--namespace PREFIX]]
                                   jobs, leases, open alerts and recent events, as tables;
                                   --watch: then one line per live event until Ctrl-C

Exit status of `tenure run`: the command's own (128 + N when killed by signal N), or
111 skipped: lease held, 112 skipped: window completed, 113 lease lost, 114 service
unreachable, 2 usage error or request refused. See `tenure run --help`.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any

from tenure._config import DEFAULT_TTL, DEFAULT_URL, ENV_CA_BUNDLE, ENV_TOKEN, ENV_URL
from tenure._errors import ServiceUnavailable, TenureError, TooManyStreams, TransportError
from tenure._events import CONNECTED, RESET
from tenure._models import DEFAULT_DEADLINE, JobSpec
from tenure._status import render_event, render_overview
from tenure._supervisor import (
    DEFAULT_GRACE,
    EXIT_COMPLETED,
    EXIT_HELD,
    EXIT_LOST,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    KILL_MARGIN,
    RunOptions,
    Schedule,
    run_command,
    stop_grace,
)
from tenure._sync.client import Tenure
from tenure.auth import hash_token, new_token
from tenure.commands import (
    ENTRY_POINT_GROUP,
    EXIT_CONFIGURATION,
    EXIT_DATABASE_UNREACHABLE,
    EXIT_MIGRATION_LOCKED,
    EXIT_NOT_LISTENING,
    SERVER,
    ServerCommands,
)
from tenure.schedule import check_cron, check_timezone

RUN_EPILOG = f"""\
environment given to COMMAND:
  TENURE_JOB, TENURE_LEASE, TENURE_WINDOW, TENURE_GENERATION, TENURE_ATTEMPT,
  TENURE_IDEMPOTENCY_KEY (<job>/<window>), TENURE_FENCING_TOKEN (<lease>/<generation>)

exit status:
  the command's own  it ran (128+N if killed by signal N; 126/127: not executable/not found)
  {EXIT_HELD}                skipped: the lease is held by another holder (0 with --skip-ok)
  {EXIT_COMPLETED}                skipped: the window is already completed (0 with --skip-ok)
  {EXIT_LOST}                the lease was lost: the command was stopped, the window not completed
  {EXIT_UNREACHABLE}                the service is unreachable or unavailable
  {EXIT_USAGE}                  invalid usage, or the service refused the request

The window is completed only when COMMAND exits 0; with --cron it is the occurrence the
schedule meant by the service's (the database's) clock, never this host's.

COMMAND (with every process it started, even one that left its process group with setsid:
on Linux) is dead before the lease can be granted to anyone else. The deadline is the TTL after
the last successful renewal was sent: if no renewal has succeeded by --grace seconds before it,
COMMAND gets SIGTERM, and SIGKILL {KILL_MARGIN:g} s before the deadline. Once the lease is lost
(the service answered lease-lost or refused a renewal, or the deadline passed while tenure run
was paused), its turn is over: SIGKILL at once. --grace (default {DEFAULT_GRACE:g} s, or less as
the TTL requires) is at most half the time between a renewal falling due and the SIGKILL, so
that a slow renewal never stops COMMAND; a longer one given is cut, with a warning.
SIGINT/SIGTERM sent to tenure run are forwarded, and SIGKILL follows --grace later; what COMMAND
leaves running when it exits is stopped the same way before the window is completed.

The service is ${ENV_URL} (default {DEFAULT_URL}) unless --url is given; ${ENV_TOKEN} is sent
as a bearer token. Over https, the service's certificate is verified with the CAs of
${ENV_CA_BUNDLE} (a CA bundle, or a folder of CA certificates) when set, else of $SSL_CERT_FILE,
else of $SSL_CERT_DIR, else of certifi's bundle, as by httpx.
"""

SERVER_EPILOG = f"""\
exit status:
  0    done (serve: stopped with Ctrl-C; 128+N when stopped by signal N, 143 for SIGTERM)
  {EXIT_CONFIGURATION}    invalid configuration: the message names the option or TENURE_* setting
  2    invalid usage
  {EXIT_NOT_LISTENING}    serve: the address cannot be listened on (port in use, not permitted),
       or the service failed to start
  {EXIT_DATABASE_UNREACHABLE}   no connection to the database: the message says where (host, port,
       database, user; never the password) and why (refused, unknown host, no such
       database, authentication failed, refused by the server's rules, timeout)
  {EXIT_MIGRATION_LOCKED}   migrate: a migration found a table locked on every try (a long
       transaction); nothing of it applied: run it again

Without TENURE_DATABASE_URL an embedded PostgreSQL is started in TENURE_DATA_DIR
(.tenure/pgdata). Every setting is a TENURE_* variable (README.md, "Configuration").
"""


def _server_commands(name: str) -> ServerCommands:
    """The service's commands, through the entry point it declares (see `tenure.commands`)."""
    try:
        commands = entry_points(group=ENTRY_POINT_GROUP)[SERVER].load()
    except KeyError:
        reason = f"no {ENTRY_POINT_GROUP!r} entry point named {SERVER!r}"
    except ModuleNotFoundError as error:  # the package is there, its dependencies are not
        reason = str(error)
    else:
        if not isinstance(commands, ServerCommands):
            raise TypeError(f"entry point {SERVER!r} is {commands!r}, not ServerCommands")
        return commands
    sys.exit(f"`tenure {name}` needs the server extra: pip install 'tenure[server]' ({reason})")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"not a number of seconds >= 0: {text!r}")
    return value


def _add_run(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        usage="tenure run JOB [--ttl S] (--cron EXPR --tz ZONE [--key K] | --window KEY)\n"
        "                  [--lease NAME] [--wait S] [--grace S] [--renew-every S] [--url URL]\n"
        "                  [--skip-ok] [--register [--deadline S] [--max-runtime S]]\n"
        "                  -- COMMAND [ARGS...]",
        help="run a command once per occurrence, under a lease",
        description="Run COMMAND once for this occurrence of JOB, under JOB's lease.",
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("job", metavar="JOB", help="the job's name (also its lease's, by default)")
    run.add_argument("--ttl", type=_seconds, default=DEFAULT_TTL, help="lease TTL in seconds")
    which = run.add_mutually_exclusive_group(required=True)
    which.add_argument("--cron", help="the job's schedule: the window is the occurrence it meant")
    which.add_argument("--window", help="the window key itself, e.g. 2026-09-25")
    run.add_argument("--tz", help="IANA time zone of --cron (required with it)")
    run.add_argument(
        "--key",
        choices=["occurrence", "date", "previous_day"],
        default="occurrence",
        help="window key of a --cron occurrence (default: occurrence)",
    )
    run.add_argument("--lease", help="lease name (default: JOB)")
    run.add_argument("--wait", type=_seconds, default=0.0, help="seconds to wait for the lease")
    run.add_argument(
        "--grace",
        type=_seconds,
        help=f"seconds between SIGTERM and SIGKILL (default: {DEFAULT_GRACE:g}, or less as the"
        " TTL requires), ending before the lease may expire",
    )
    run.add_argument("--renew-every", type=_seconds, help="renewal period (default: TTL / 3)")
    run.add_argument("--url", help=f"service URL (default: ${ENV_URL} or {DEFAULT_URL})")
    run.add_argument("--skip-ok", action="store_true", help="exit 0 when the run is skipped")
    run.add_argument(
        "--register",
        action="store_true",
        help="register JOB with its --cron schedule, so the service alerts on missed windows",
    )
    run.add_argument(
        "--deadline",
        type=_seconds,
        default=DEFAULT_DEADLINE,
        help="with --register: seconds after the occurrence by which the window must complete",
    )
    run.add_argument("--max-runtime", type=_seconds, help="with --register: longest normal run")
    # COMMAND is everything after "--"; main() splits it off before parsing.
    run.set_defaults(parser=run)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tenure", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command_name", required=True)
    server_help: dict[str, Any] = {
        "epilog": SERVER_EPILOG,
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
    serve = commands.add_parser("serve", help="run the HTTP service", **server_help)
    serve.add_argument("--host", help="address to bind (default 127.0.0.1, TENURE_HOST)")
    serve.add_argument("--port", type=int, help="port (default 8080, TENURE_PORT)")
    serve.add_argument("--workers", type=int, help="worker processes (default 1, TENURE_WORKERS)")
    commands.add_parser("migrate", help="apply database migrations and exit", **server_help)
    admin = commands.add_parser("admin", help="operator commands (need the server extra)")
    actions = admin.add_subparsers(dest="admin_command", required=True)
    bump = actions.add_parser(
        "bump-generations",
        help="after a restore: move every generation ahead and expire every lease",
        **server_help,
    )
    bump.add_argument("--by", type=int, required=True, help="amount added to every generation")
    token = commands.add_parser("token", help="make bearer tokens for the service's tokens file")
    token_actions = token.add_subparsers(dest="token_command", required=True)
    new = token_actions.add_parser("new", help="a new token and its [[token]] entry")
    new.add_argument("--principal", required=True, help="who the token stands for")
    new.add_argument(
        "--role", action="append", choices=["reader", "client", "admin"], required=True
    )
    new.add_argument("--namespace", action="append", required=True, help="name prefix, or '*'")
    token_actions.add_parser("hash", help="hash a token read from standard input")
    _add_run(commands)
    status = commands.add_parser("status", help="jobs, leases, alerts and recent events")
    status.add_argument("--url", help=f"service URL (default: ${ENV_URL} or {DEFAULT_URL})")
    status.add_argument(
        "--watch",
        action="store_true",
        help="then follow the live event stream, one line per event, until Ctrl-C",
    )
    status.add_argument("--namespace", help="with --watch: only events whose name starts so")
    return parser


def _window(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> str | Schedule:
    """The window key, or the schedule the service resolves it from when the run starts."""
    if arguments.window is not None:
        if arguments.tz is not None:
            parser.error("--tz goes with --cron, not --window")
        return str(arguments.window)
    if arguments.tz is None:
        parser.error("--cron needs --tz (an IANA time zone such as America/Sao_Paulo)")
    try:
        return Schedule(check_cron(arguments.cron), check_timezone(arguments.tz), arguments.key)
    except ValueError as error:
        parser.error(str(error))


def _grace(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> float:
    """--grace, cut to fit the TTL: with a warning when it was given, silently when not."""
    asked = DEFAULT_GRACE if arguments.grace is None else arguments.grace
    try:
        grace = stop_grace(arguments.ttl, arguments.renew_every, asked)
    except ValueError as error:
        parser.error(str(error))
    if arguments.grace is not None and grace < asked:
        print(
            f"tenure run: --grace {arguments.grace:g} s is cut to {grace:.3g} s: with a TTL of"
            f" {arguments.ttl:g} s a longer one would stop the command while renewals still work",
            file=sys.stderr,
        )
    return grace


def _run_options(
    parser: argparse.ArgumentParser, arguments: argparse.Namespace, command: list[str]
) -> RunOptions:
    if not command:
        parser.error("give the command to run after --: tenure run JOB ... -- COMMAND [ARGS...]")
    if arguments.ttl <= 0:
        parser.error("--ttl must be more than 0")
    return RunOptions(
        job=arguments.job,
        window=_window(parser, arguments),
        command=command,
        ttl=arguments.ttl,
        lease=arguments.lease,
        wait=arguments.wait,
        grace=_grace(parser, arguments),
        renew_every=arguments.renew_every,
        skip_ok=arguments.skip_ok,
        register=_registration(parser, arguments),
    )


def _registration(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> JobSpec | None:
    if not arguments.register:
        return None
    if arguments.cron is None:
        parser.error("--register needs --cron and --tz: the service watches the schedule")
    if arguments.deadline <= 0:
        parser.error("--deadline must be more than 0")
    return JobSpec(
        schedule=arguments.cron,
        timezone=arguments.tz,
        key=arguments.key,
        deadline_seconds=arguments.deadline,
        max_runtime_seconds=arguments.max_runtime,
        lease=arguments.lease,
    )


def _status(arguments: argparse.Namespace) -> int:
    """Print the overview (and with --watch, follow the events); 114 when the service cannot
    be reached, 2 when it refuses; 0 on Ctrl-C."""
    try:
        with Tenure.from_env(arguments.url) as client:
            if arguments.watch:
                _watch(client, arguments.namespace)
            else:
                sys.stdout.write(render_overview(client.overview()))
    except TooManyStreams as error:  # --watch: the service is there, its streams are not
        print(f"tenure status: no event stream: {error}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except (TransportError, ServiceUnavailable) as error:
        print(f"tenure status: service unreachable: {error}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except (TenureError, ValueError) as error:
        print(f"tenure status: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 0
    return 0


def _watch(client: Tenure, namespace: str | None) -> None:
    """The overview once the stream is open (so that no change falls between the two), then a
    line per event, and the overview again whenever the stream says events were missed."""
    shown = False
    try:
        for event in client.events(namespace=namespace):
            if event.type == CONNECTED and shown:
                continue
            if event.type in (CONNECTED, RESET):
                if event.type == RESET:
                    print(render_event(event))
                sys.stdout.write(render_overview(client.overview()) + "\n")
                shown = True
            else:
                print(render_event(event))
            sys.stdout.flush()
    except TenureError:  # no stream (an older service, a refusal): the status still shows
        if not shown:
            sys.stdout.write(render_overview(client.overview()))
        raise


def _run(parser: argparse.ArgumentParser, arguments: argparse.Namespace, command: list[str]) -> int:
    options = _run_options(parser, arguments, command)
    logging.basicConfig(level=logging.WARNING, format="tenure run: %(message)s")
    try:
        client = Tenure.from_env(arguments.url)
    except ValueError as error:
        parser.error(str(error))
    with client:
        return run_command(client, options)


def _token(arguments: argparse.Namespace) -> None:
    if arguments.token_command == "hash":  # noqa: S105 - a sub-command name
        try:
            print(hash_token(sys.stdin.readline().strip()))
        except ValueError as error:
            sys.exit(f"tenure token hash: {error}")
        return
    token = new_token()
    print(f"# token for {arguments.principal} (shown once; give it to the job as TENURE_TOKEN):")
    print(f"# {token}")
    print("[[token]]")
    print(f"principal = {json.dumps(arguments.principal)}")
    print(f'sha256 = "{hash_token(token)}"')
    print(f"roles = {json.dumps(arguments.role)}")
    print(f"namespaces = {json.dumps(arguments.namespace)}")


def main(argv: Sequence[str] | None = None) -> None:
    words = list(sys.argv[1:] if argv is None else argv)
    # `tenure run … -- COMMAND ARGS`: the command is never parsed as options of ours.
    command: list[str] = []
    if "--" in words:
        split = words.index("--")
        words, command = words[:split], words[split + 1 :]
    parser = _parser()
    arguments = parser.parse_args(words)
    if arguments.command_name == "serve":
        _server_commands("serve").serve(arguments.host, arguments.port, arguments.workers)
    elif arguments.command_name == "migrate":
        _server_commands("migrate").migrate()
    elif arguments.command_name == "token":
        _token(arguments)
    elif arguments.command_name == "admin":
        _server_commands("admin").bump_generations(arguments.by)
    elif arguments.command_name == "run":
        sys.exit(_run(arguments.parser, arguments, command))
    elif arguments.command_name == "status":
        sys.exit(_status(arguments))
