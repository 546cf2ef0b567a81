"""The blocking client, generated from `tenure._async` by scripts/generate_sync.py: edit those
modules and run the script; tests/unit/test_generated.py fails when these are out of date."""
