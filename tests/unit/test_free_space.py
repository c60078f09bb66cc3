"""station_free_space, the module behind the preflight's disk check."""

from __future__ import annotations

import os

from tests.conftest import ansible_module


def _module():
    return ansible_module("library/station_free_space.py")


def test_a_path_that_does_not_exist_yet_is_measured_where_it_will_be(tmp_path) -> None:
    result = _module().free_space(str(tmp_path / "not" / "yet" / "there"))
    stats = os.statvfs(tmp_path)
    assert result["checked"] == str(tmp_path)
    assert result["free_gb"] == round(stats.f_bavail * stats.f_frsize / 1000**3, 1)
    assert abs(result["free_bytes"] - stats.f_bavail * stats.f_frsize) < 1000**3  # others write meanwhile


def test_two_folders_on_one_file_system_report_one_device(tmp_path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    module = _module()
    assert module.free_space(str(tmp_path / "a"))["device"] == module.free_space(str(tmp_path / "b"))["device"]
    assert module.free_space(str(tmp_path))["device"] != module.free_space("/proc")["device"]
