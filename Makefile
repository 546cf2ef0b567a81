.PHONY: check serve test openapi sync

check:  ## exactly what CI runs
	bash .ci/run

serve:
	scripts/serve

test:
	scripts/test

openapi:  ## regenerate the committed API contract
	.venv/bin/python scripts/export_openapi.py

sync:  ## regenerate the sync client (client/tenure/_sync/) from the async one
	.venv/bin/python scripts/generate_sync.py
