"""Lease, window and fence rules: pure Python, no web framework and no database driver."""
