"""Launches: a planned executor shape started as a real cluster, a batch of fits run on it, everything torn down.

``registry`` maps (engine, manager) to the module that starts it, imported only when a sweep needs it;
``spark/`` and ``dask/`` hold one module per manager, ``hosts/`` what reaching machines needs (ssh,
processes, the packed environment YARN unpacks).
"""
