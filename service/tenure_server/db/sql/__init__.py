"""SQL files shipped with the package (`queries.sql`)."""
