"""Filters shared by station's roles and playbooks."""

from __future__ import annotations

import json
from typing import Any

WILDCARDS = {"0.0.0.0", "::", ""}


def local_address(bind_address: str) -> str:
    """The address a host's own checks use to reach a port published on bind_address."""
    return "127.0.0.1" if bind_address in WILDCARDS else bind_address


def container_summary(found: dict[str, Any]) -> dict[str, Any]:
    """A docker_container_info loop result, reduced to what a status report shows (no environment)."""
    container = found.get("container") or {}
    state = container.get("State", {})
    config = container.get("Config", {})
    bindings = container.get("HostConfig", {}).get("PortBindings") or {}
    return {
        "name": found.get("item", container.get("Name", "").lstrip("/")),
        "status": state.get("Status", "absent"),
        "health": state.get("Health", {}).get("Status", "-"),
        "image": config.get("Image", "-"),
        "recipe": (config.get("Labels") or {}).get("io.station.recipe", "-"),
        "config": (config.get("Labels") or {}).get("io.station.config", "-"),
        "ports": [f"{b['HostIp']}:{b['HostPort']}->{port}" for port, binds in bindings.items() for b in binds or []],
        "started_at": state.get("StartedAt", "-"),
    }


def prometheus_labels(labels: dict[str, Any]) -> str:
    """A label set in Prometheus' exposition format: {a="1",b="x \\"y\\""}."""
    quoted = (str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") for value in labels.values())
    return "{" + ",".join(f'{name}="{value}"' for name, value in zip(labels, quoted, strict=True)) + "}"


def target_summary(targets_response: dict[str, Any]) -> list[dict[str, Any]]:
    """Prometheus /api/v1/targets, reduced to job, instance, health and last error."""
    active = (targets_response.get("data") or {}).get("activeTargets") or []
    return [
        {
            "job": target["labels"].get("job"),
            "instance": target["labels"].get("instance"),
            "health": target.get("health"),
            "last_error": target.get("lastError", ""),
        }
        for target in active
    ]


def json_object(text: str) -> dict[str, Any] | None:
    """A JSON object parsed from text; {} for empty text, None when it is not a JSON object."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def extend_argv(checks: list[dict[str, Any]], extra: list[Any]) -> list[dict[str, Any]]:
    """Argument-list checks ({label, argv}) with the arguments station adds to every engine appended."""
    return [check | {"argv": [*check["argv"], *(str(arg) for arg in extra)]} for check in checks]


class FilterModule:
    def filters(self):
        return {
            "station_local_address": local_address,
            "station_container_summary": container_summary,
            "station_target_summary": target_summary,
            "station_prometheus_labels": prometheus_labels,
            "station_json_object": json_object,
            "station_extend_argv": extend_argv,
        }
