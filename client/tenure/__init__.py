"""Tenure's Python client: leases, job windows and fencing tokens, once per occurrence."""

__all__: list[str] = []
