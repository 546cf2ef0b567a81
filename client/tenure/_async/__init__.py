"""The client's I/O, written once, async: the client, the lease handle's block, the renewal
loop and the runner. scripts/generate_sync.py generates `tenure._sync` from these modules; what
does not touch the network is in the shared modules beside them (`_client`, `_lease`,
`_renewer`, `_executor`)."""
