"""Numbered schema migrations, applied in order by `tenure_server.db.migrate`."""
