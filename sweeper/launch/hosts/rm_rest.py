"""The ResourceManager's REST API (``/ws/v1/cluster``): one GET, each HA address tried in turn."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.hadoop_conf import HadoopConf

REQUEST_TIMEOUT_S = 30.0


def rest(conf: HadoopConf, path: str, urls: list[str] | None = None) -> Any:
    """A GET of the ResourceManager's REST API, trying each HA address (``urls``, else the configuration's;
    a standby redirects to the active)."""
    errors = []
    for url in urls if urls is not None else conf.resource_manager_urls():
        request = urllib.request.Request(f"{url}/ws/v1/cluster{path}", headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            if error.code in (401, 403):
                raise LaunchError(
                    f"{url}: the ResourceManager's REST API refused the request ({error.code} {error.reason}): "
                    "it needs authentication (Kerberos/SPNEGO or a web filter), which sweeper does not do"
                ) from error
            errors.append(f"{url}: {error.code} {error.reason}")
        except (OSError, ValueError) as error:
            errors.append(f"{url}: {error}")
    raise LaunchError("no ResourceManager answered: " + "; ".join(errors))
