"""One host of a fleet out of its router's rotation for maintenance, and back (invoke drain, invoke undrain).

The fleet's router runs on the host its station_fleet_router names. Out: the router sends the host no new request at
once (vllm-router's /remove_worker), those it already sent finish there, and `drain` returns when the host's engine
has none left running or waiting: the host can then stop without failing a request. In: the router takes it again
once its engine passes the health check (/add_worker). A host drained stays out until `undrain`, through deploys of
either host; only a new router container (its configuration changed) lists every host of the fleet again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.console import Console

from station.deploy import inventory, playbook
from station.errors import StationError

FLEET_HINT = "name a host whose station_fleet_router names another (see ansible/inventory/group_vars/sims.yml)"


@dataclass(frozen=True)
class Rotation:
    host: str
    router: str  # the host whose router serves its fleet
    workers: list[str]  # what that router routes to afterwards
    seconds: float


def router_of(host: str) -> str:
    """The host whose router serves `host`'s fleet; a clear error for a host in no fleet, or the router's own."""
    router = inventory.host_vars(host).get("station_fleet_router")
    if router is None:
        raise StationError(f"{host} is in no fleet: no station_fleet_router is set for it", FLEET_HINT)
    if router == host:
        raise StationError(
            f"{host} runs its fleet's router: out of the rotation, the fleet would have none", FLEET_HINT
        )
    return router


def drain(host: str, console: Console) -> Rotation:
    """Take `host` out of its fleet's router's rotation, once its engine has finished what it was sent."""
    return _rotate(host, "out", console)


def undrain(host: str, console: Console) -> Rotation:
    """Put `host` back in its fleet's router's rotation, once its engine passes the health check."""
    return _rotate(host, "in", console)


def _rotate(host: str, rotation: str, console: Console) -> Rotation:
    router = router_of(host)
    started = time.monotonic()
    extra = {"station_rotation_host": host, "station_rotation": rotation}
    result = playbook.run("rotation", router, extra, console)
    workers = result.handed_by(router, "station_router_workers") or []
    return Rotation(host=host, router=router, workers=workers, seconds=time.monotonic() - started)
