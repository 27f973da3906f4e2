"""What the tests start and check besides the package.

An sshd, network-namespace hosts, a MiniYARNCluster, faults, leftover processes, small batches.
"""
