"""What tests, the chaos harness (`chaos/`) and the benchmarks (`bench/`) share, written once:

    processes   `tenure serve` (or any HTTP server) as a real process: a free loopback port,
                the environment given, ready once /readyz answers, stopped with SIGTERM
    postgres    the PostgreSQL server: one given by URL, or pgserver's embedded one in a short
                temporary folder; databases made and dropped on it; pgserver's programs
    payments    the fenced downstream app, which is the documented example
                (examples/payments_api.py), run as a process of its own
    lifespan    an app's lifespan run in this process, and the app as a server calls it (each
                request's scope with a copy of the lifespan state, where the services are)
    prometheus  a real Prometheus (Debian's package) scraping given targets and evaluating rule
                files every second, and its HTTP API (queries, rules, alerts)

Nothing here imports pytest: chaos runs as `python -m chaos.run` from the repository's root, and
the bench scripts put the root on `sys.path`, so both import `tests.support` as tests do.
"""
