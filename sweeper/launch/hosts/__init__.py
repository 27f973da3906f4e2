"""Reaching machines: ssh, the processes a launch started, the packed environment YARN unpacks."""
