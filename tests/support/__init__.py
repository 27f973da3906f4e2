"""What the tests start and check besides the package.

An sshd, network-namespace hosts, a MiniYARNCluster, standalone Spark and Dask clusters, faults,
leftover processes, small batches.
"""
