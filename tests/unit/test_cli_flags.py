"""The converters of :mod:`pivoter.cli.flags` hand the commands each value parsed once, in parts.

The refusals (messages, exit codes) are walked for every flag by ``test_cli_bad_flags.py``; here:
what an accepted value becomes, so that no command has to split or parse its text again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import (
    Address,
    CatalogChoice,
    CatalogLocation,
    CatalogSpec,
    FlagError,
    HostPort,
    Location,
    NamespacedName,
    ObjectKey,
    OutputPath,
    OutputTarget,
    PackageChoice,
    PackageSpec,
    Port,
)


@pytest.mark.parametrize(
    ("text", "address", "shown"),
    [
        ("127.0.0.1:0", Address("127.0.0.1", 0), "127.0.0.1:0"),
        ("localhost:8080", Address("localhost", 8080), "localhost:8080"),
        ("[::1]:50051", Address("::1", 50051), "[::1]:50051"),
    ],
)
def test_a_host_and_port_are_an_address(text: str, address: Address, shown: str) -> None:
    parsed = HostPort()(text)
    assert parsed == address
    assert str(parsed) == shown  # as a URL names it: IPv6 in brackets


def test_an_address_on_every_interface_or_none() -> None:
    assert HostPort(every_interface=True)(":8080") == Address("", 8080)
    assert HostPort(every_interface=True, off=True)("0") is None
    with pytest.raises(FlagError, match="has no host"):
        HostPort()(":8080")
    assert (HostPort().kind, HostPort(every_interface=True, off=True).kind) == (
        "host-port",
        "bind-address",
    )


def test_a_port_that_is_off_is_none() -> None:
    assert Port(off=True)("-1") is None
    assert Port(off=True)("0") == 0
    with pytest.raises(FlagError, match="out of range"):
        Port()("-1")


def test_a_namespaced_name_is_an_object_key() -> None:
    key = NamespacedName()("olm/etcd")
    assert key == ObjectKey("olm", "etcd")
    assert (key.namespace, key.name, str(key)) == ("olm", "etcd", "olm/etcd")
    assert NamespacedName(optional=True)("") is None


def test_a_catalog_location_says_what_it_is(tmp_path: Path) -> None:
    assert CatalogLocation()(str(tmp_path)) == Location(str(tmp_path), "", str(tmp_path))
    for scheme in ("http", "https", "grpc", "grpcs"):
        location = CatalogLocation()(f"{scheme}://catalogs.example:8443/x")
        assert (location.scheme, location.path, location.remote) == (scheme, "", True)
        assert str(location) == f"{scheme}://catalogs.example:8443/x"
    assert not CatalogLocation()(str(tmp_path)).remote


def test_a_catalog_spec_is_a_location_with_its_options(tmp_path: Path) -> None:
    directory = Location(str(tmp_path), "", str(tmp_path))
    assert CatalogSpec()(str(tmp_path)) == CatalogChoice(directory, 0, "")
    assert CatalogSpec()(f"{tmp_path},priority=5,name=mine,priority=-2") == CatalogChoice(
        directory, priority=-2, name="mine"
    )
    with pytest.raises(FlagError) as refused:
        CatalogSpec()(f"{tmp_path},priority=high")
    assert refused.value.code == ExitCode.INVALID


def test_a_package_spec_is_a_name_and_a_range() -> None:
    assert PackageSpec()("etcd") == PackageChoice("etcd", "")
    assert PackageSpec()("etcd@>=1.2 <2") == PackageChoice("etcd", ">=1.2 <2")
    assert PackageSpec()("etcd@") == PackageChoice("etcd", "")


def test_an_output_path_is_a_file_or_stdout_with_its_format(tmp_path: Path) -> None:
    graph = OutputPath("-o", stdout=("svg", "dot"), extensions=("svg", "dot", "mmd"))
    assert graph("svg") == OutputTarget(None, "svg")
    out = tmp_path / "graph.MMD"
    assert graph(str(out)) == OutputTarget(str(out), "mmd")
    assert OutputPath()(str(tmp_path / "report")) == OutputTarget(str(tmp_path / "report"), "")


def test_a_file_url_names_its_directory(tmp_path: Path) -> None:
    """``catalog render --help`` offers ``file://`` sources: they are read as the directory."""
    text = f"file://{tmp_path}"
    assert CatalogLocation()(text) == Location(text, "", str(tmp_path))
    with pytest.raises(FlagError) as refused:
        CatalogLocation()(f"file://{tmp_path}/missing")
    assert refused.value.code is ExitCode.FAILURE
    with pytest.raises(FlagError, match="expected a directory, file://"):
        CatalogLocation()("ftp://catalogs.example/x")
