"""What `invoke status` reads on a host, typed: the status playbook writes it (status.json, from the roles'
status entry points and the station_container_summary / station_target_summary filters), and the CLI, the
promotion and the tune read it through these models, never by string keys."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ContainerStatus(BaseModel):
    """One container a role runs, as Docker reports it (status "absent" when there is none)."""

    model_config = ConfigDict(frozen=True)

    name: str
    status: str
    health: str
    image: str
    recipe: str  # the engine's io.station.recipe label; "-" elsewhere
    config: str  # the engine's io.station.config label (render.config_hash); "-" elsewhere
    dtype: str = "-"  # the engine's --dtype (a CPU engine that follows its host's CPU gets it there); "-" elsewhere
    ports: list[str]
    started_at: str

    @property
    def running(self) -> bool:
        return self.status == "running"


class ScrapeTarget(BaseModel):
    """One target Prometheus scrapes, with the health of its last scrape."""

    model_config = ConfigDict(frozen=True)

    job: str | None
    instance: str | None
    health: str | None
    last_error: str = ""


class HostStatus(BaseModel):
    model_config = ConfigDict(frozen=True)

    host: str
    containers: list[ContainerStatus]
    targets: list[ScrapeTarget]

    def container(self, name: str) -> ContainerStatus | None:
        return next((found for found in self.containers if found.name == name), None)
