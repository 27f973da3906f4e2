"""The workload: data sources, the batch of fits (replicas, cv, search, data-parallel), the fit environment."""
