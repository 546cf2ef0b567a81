"""HTTP: the app factory, routers, wire schemas and the problem+json mapping."""
