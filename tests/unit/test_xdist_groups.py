"""The worker groups of hack/test.sh (tests/xdist_groups.py)."""

from __future__ import annotations

from tests.xdist_groups import group_of


def test_a_module_is_its_own_group_whatever_its_test_ids_hold() -> None:
    assert group_of("tests/unit/test_cli.py::test_version") == "tests/unit/test_cli.py"
    assert group_of("tests/unit/test_cli.py::Case::test[a::b@c]") == "tests/unit/test_cli.py"


def test_the_modules_of_a_shared_directory_are_one_group() -> None:
    assert group_of("tests/olmv0/test_adopt_cluster.py::test_undo") == "olmv0"
    assert group_of("tests/olmv0/test_differential_cluster.py::test[round0]") == "olmv0"
    assert group_of("tests/image/test_real_node.py::test_node") == "image"
    assert group_of("tests/imagery/test_x.py::t") == "tests/imagery/test_x.py"
