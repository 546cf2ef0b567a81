"""PostgreSQL: the pool, the SQL, the repository that runs it, and migrations."""
