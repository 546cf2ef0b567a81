"""A Jepsen-style safety harness for Tenure (issue 5): real processes, real faults, a checker.

    python -m chaos.run --duration 120 --workers 16 --faults F1,F3,F4,F6,F7 --seed 1

Worker processes (`chaos.worker`) take leases from real `tenure serve` processes, write under
them to two fenced resources and an unfenced side-effect log, and record every operation
(`chaos.history`); a nemesis (`chaos.nemesis`) pauses, kills and restarts processes and the
database and disturbs the network (`chaos.proxy`); afterwards the database's own facts are read
and `chaos.checker.check` — a pure function of the recorded history — says whether any of the
seven properties of issue 5 was violated. `chaos.variants` holds deliberately broken fences and
clocks for the negative controls; nothing under `chaos/` is imported by the product.
"""
