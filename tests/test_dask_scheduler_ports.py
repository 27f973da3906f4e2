"""The Dask scheduler of a YARN launch binds no fixed port (issue #33): its HTTP server takes any free port on the
cluster-facing address, as on ``manager: local`` and ``ssh``, so two sweeps on one edge node never collide on 8787.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from distributed import LocalCluster

from sweeper.launch.dask.yarn import scheduler_options

DASK_DEFAULT_DASHBOARD_PORT = 8787


def test_the_yarn_scheduler_binds_its_host_on_any_free_port_without_a_dashboard(tmp_path: Path) -> None:
    options = scheduler_options("10.1.2.3", tmp_path)
    assert options["dashboard_address"] == "10.1.2.3:0"  # None would be :8787 (Scheduler.start_http_server)
    assert options["scheduler_port"] == 0 and options["scheduler_kwargs"] == {"dashboard": False}
    assert options["host"] == "10.1.2.3" and options["n_workers"] == 0
    assert options["local_directory"] == str(tmp_path)


@pytest.mark.integration
def test_two_yarn_schedulers_on_one_host_each_take_a_free_port(tmp_path: Path) -> None:
    """The schedulers the YARN launches start here, two at once (two sweeps): neither on 8787, both bound."""
    with (
        LocalCluster(**scheduler_options("127.0.0.1", tmp_path / "a")) as first,
        LocalCluster(**scheduler_options("127.0.0.1", tmp_path / "b")) as second,
    ):
        servers = [cluster.scheduler.http_server for cluster in (first, second)]
        ports = [server.port for server in servers]
        assert DASK_DEFAULT_DASHBOARD_PORT not in ports and 0 not in ports and ports[0] != ports[1], ports
        assert {server.address for server in servers} == {"127.0.0.1"}
        assert all(cluster.scheduler_address.startswith("tcp://127.0.0.1:") for cluster in (first, second))
