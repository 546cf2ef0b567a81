"""Adapters: what connects the use cases to the world outside the database: Prometheus
telemetry, token files, webhook HTTP, the event stream, the database clock watch and the monitor's
driving loop. They implement the ports of `app` and are wired by `server`."""
