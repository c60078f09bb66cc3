"""Filters shared by station's roles and playbooks."""

from __future__ import annotations

import json
import re
from hashlib import sha256
from typing import Any

WILDCARDS = {"0.0.0.0", "::", ""}


def local_address(bind_address: str) -> str:
    """The address a host's own checks use to reach a port published on bind_address."""
    return "127.0.0.1" if bind_address in WILDCARDS else bind_address


def fleet_engine_urls(hosts: list[str], hostvars: Any) -> list[str]:
    """Where a fleet's router reaches each of these hosts' live engine: the host's private address, on the fleet's
    engine port (vllm_server_fleet_address, station_fleet_engine_port)."""
    return [
        f"http://{hostvars[host]['vllm_server_fleet_address']}:{hostvars[host]['station_fleet_engine_port']}"
        for host in hosts
    ]


def fleet_scrape_targets(hosts: list[str], hostvars: Any, ports: dict[str, int]) -> dict[str, list[dict]]:
    """A fleet router host's Prometheus jobs for the fleet's other hosts: job name → each host's target at its private
    address on the fleet's port for that job (vllm_server_fleet_address, station_fleet_ports), with its name."""
    return {
        job: [{"targets": [f"{hostvars[host]['vllm_server_fleet_address']}:{port}"], "host": host} for host in hosts]
        for job, port in ports.items()
    }


def health_check(port: int, path: str, key_variable: str = "") -> list[str]:
    """A container's Docker health check: GET `path` on its own loopback, healthy on status 200, with the API key from
    the environment variable `key_variable` where one is named. Docker runs it every few seconds for as long as the
    container lives, so it imports sockets only, without site-packages (`-I -S`): a third of the CPU urllib took."""
    key = f"'Authorization: Bearer ' + os.environ['{key_variable}'] + '\\r\\n' + " if key_variable else ""
    probe = (
        f"import os, socket; c = socket.create_connection(('127.0.0.1', {int(port)}), timeout=3); "
        f"c.sendall(('GET {path} HTTP/1.0\\r\\n' + {key}'\\r\\n').encode()); "
        "answer = b''.join(iter(lambda: c.recv(65536), b'')); "
        "raise SystemExit(answer.split(b' ', 2)[1:2] != [b'200'])"
    )
    return ["CMD", "python3", "-I", "-S", "-c", probe]


IN_FLIGHT = re.compile(r"^vllm:num_requests_(?:running|waiting)\{[^}]*\} (\S+)$", re.MULTILINE)


def in_flight(metrics: str) -> float:
    """Requests an engine is still serving or holding in its queue, from the text of its /metrics."""
    return sum(float(value) for value in IN_FLIGHT.findall(metrics))


def flag_value(argv: list[Any], flag: str) -> str:
    """The value given to `flag` in an argument list (its last, as argparse keeps); empty where it is not given."""
    values = [str(argv[index + 1]) for index, arg in enumerate(argv[:-1]) if arg == flag]
    return values[-1] if values else ""


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
        "dtype": flag_value(config.get("Cmd") or [], "--dtype") or "-",
        "ports": [f"{b['HostIp']}:{b['HostPort']}->{port}" for port, binds in bindings.items() for b in binds or []],
        "started_at": state.get("StartedAt", "-"),
    }


def docker_known(info: dict[str, Any]) -> dict[str, Any]:
    """A docker_host_info result (containers, images, networks), reduced to what the checks before a deploy read:
    each container's host ports published now (a stopped one publishes none), each tagged image's id, the networks."""
    return {
        "containers": {
            name.lstrip("/"): sorted(
                {str(port["PublicPort"]) for port in container.get("Ports") or [] if "PublicPort" in port}
            )
            for container in info.get("containers") or []
            for name in container.get("Names") or []
        },
        "images": {tag: image["Id"] for image in info.get("images") or [] for tag in image.get("RepoTags") or []},
        "networks": [network["Name"] for network in info.get("networks") or []],
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


def argcheck_records(checks: list[dict[str, Any]], image_id: str, parser_source: str) -> list[dict[str, Any]]:
    """Each argument-list check with the name of the file that records one image's parser accepting its argv. The label
    is not part of it: a ladder's check-recipe and its steps' deploys share their records."""
    return [
        {"check": check, "record": sha256((image_id + json.dumps(check["argv"]) + parser_source).encode()).hexdigest()}
        for check in checks
    ]


RELEASE = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def _release(version: str) -> tuple[int, int, int] | None:
    found = RELEASE.match(version.strip())
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def unfixed(version: str, fixed_releases: list[str]) -> bool:
    """Whether `version` predates a fix: `fixed_releases` is the first fixed release of each line (major.minor) that
    got it ("1.2.8", "1.3.3"). A line newer than all of them has it from its start; an older or unlisted line, or a
    version that reads as none, does not. A distribution's suffix (+dfsg1, -0ubuntu1) is ignored: a backport is not
    visible in the number, so callers report rather than refuse."""
    found = _release(version)
    fixes = {fix[:2]: fix for fix in map(_release, fixed_releases) if fix}
    if found is None:
        return True
    if found[:2] in fixes:
        return found < fixes[found[:2]]
    return found[:2] < max(fixes)


def security_findings(versions: dict[str, str], fixes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fixes ({name, component, fixed, fixes}) that the reported `versions` ({component: version}) predate;
    a component not reported (not installed, or another runtime) is left out."""
    return [
        fix | {"version": versions[fix["component"]]}
        for fix in fixes
        if versions.get(fix["component"]) and unfixed(versions[fix["component"]], fix["fixed"])
    ]


class FilterModule:
    def filters(self):
        return {
            "station_local_address": local_address,
            "station_fleet_engine_urls": fleet_engine_urls,
            "station_fleet_scrape_targets": fleet_scrape_targets,
            "station_in_flight": in_flight,
            "station_health_check": health_check,
            "station_flag_value": flag_value,
            "station_container_summary": container_summary,
            "station_docker_known": docker_known,
            "station_target_summary": target_summary,
            "station_prometheus_labels": prometheus_labels,
            "station_json_object": json_object,
            "station_extend_argv": extend_argv,
            "station_argcheck_records": argcheck_records,
            "station_security_findings": security_findings,
        }
