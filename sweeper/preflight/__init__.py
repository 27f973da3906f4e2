"""``sweeper check``: the preflight a user runs before spending cluster time (starts no measurement)."""
