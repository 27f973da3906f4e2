"""Launches: a planned executor shape started as a real cluster, a batch of fits run on it, everything torn down.

``registry`` holds the engine and manager names and maps (engine, manager) to the module that starts
it, imported only when a sweep needs it; ``options`` the managers' typed options; ``lifecycle`` the
one start-check-run-teardown every launch goes through. ``spark/`` and ``dask/`` hold each engine's
shared half (``base``, ``session``) and one small backend module per manager; ``hosts/`` what
reaching machines needs (ssh, yarn, processes, the packed environment YARN unpacks).
"""
