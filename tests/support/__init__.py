"""What tests, the chaos harness (`chaos/`) and the benchmarks (`bench/`) share, written once:

    processes   the one process launcher: `tenure serve` (or any HTTP server) as a real
                process (a free loopback port, the environment given, ready once /readyz
                answers, stopped with SIGTERM), and `Processes`, the commands a test starts
    postgres    the one PostgreSQL helper: the server (one given by URL, or pgserver's embedded
                one in a short temporary folder); databases made, copied, migrated to a version
                and dropped on it; an outage; pgserver's programs
    payments    the fenced downstream app, which is the documented example
                (examples/payments_api.py), run as a process of its own
    lifespan    an app's lifespan run in this process, and the app as a server calls it (each
                request's scope with a copy of the lifespan state, where the services are)
    prometheus  a real Prometheus (Debian's package) scraping given targets and evaluating rule
                files every second, and its HTTP API (queries, rules, alerts)
    live_service
                the service in this process over a real socket, in a thread (`LiveService`),
                and a `Proxy` in front of it that can black-hole
    event_streams
                an app behind uvicorn as a task of the test's loop (`served`), and a
                Server-Sent Events reader checking each event against openapi/openapi.json
    tokens      the test principals, their tokens file and Authorization headers

(`grown`, a database grown to a year of use, is the grown migration test's and the bench's.)
tests/README.md maps the tests to behaviours and lists these again.

Nothing here imports pytest: chaos runs as `python -m chaos.run` from the repository's root, and
the bench scripts put the root on `sys.path`, so both import `tests.support` as tests do.
"""
