.PHONY: check serve test openapi sync node events

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

events:  ## regenerate the client's event types (client/tenure/_event_types.py) from the service's
	.venv/bin/python scripts/generate_event_types.py

node:  ## regenerate the Node.js client's problem classes and its .d.ts (client/node)
	.venv/bin/python scripts/generate_node_problems.py
	cd client/node && npm ci --no-audit --no-fund --loglevel=error && npm run --silent types
