"""Tenure's coordination service: leases, job windows and fences over HTTP on PostgreSQL."""
