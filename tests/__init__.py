# tests/integration/test_decisions.py, rewritten on another branch of issue 28, still reads
# `from tests import postgres`; the one PostgreSQL helper is tests.support.postgres. Delete this
# line once that file imports it from there.
from tests.support import postgres as postgres
