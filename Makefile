.PHONY: check serve test openapi

check:  ## exactly what CI runs
	bash .ci/run

serve:
	scripts/serve

test:
	scripts/test

openapi:  ## regenerate the committed API contract
	.venv/bin/python scripts/export_openapi.py
