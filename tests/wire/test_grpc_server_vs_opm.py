"""Our ``api.Registry`` server answers every RPC with the same messages as ``opm serve``.

Both serve the same directory; every RPC is asked with every name the catalog holds (and some it
does not), and the answers are compared message by message (bytes of the deterministic
serialization). Streams whose order opm leaves to Go map iteration are compared as multisets;
``GetBundleThatReplaces``, where opm picks at random among several candidates, is checked against
its contract instead.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from resolver.catalog.load import load_directory
from tests.wire.conftest import CATALOGS, DATA, OpmServer, PivoterServer
from tests.wire.rpc import Answer, Registry

pytestmark = pytest.mark.opm


def _pair(
    name: str,
    opm_server: Callable[[Path], OpmServer],
    pivoter_server: Callable[..., PivoterServer],
) -> tuple[Registry, Registry, Path]:
    directory = DATA / name
    return (
        Registry(opm_server(directory).target),
        Registry(pivoter_server(directory).target),
        directory,
    )


def _same(theirs: Answer, ours: Answer, *, ordered: bool = True) -> None:
    assert ours.key(ordered=ordered) == theirs.key(ordered=ordered), (theirs, ours)


@pytest.mark.parametrize("name", CATALOGS)
def test_every_rpc_matches_opm(
    name: str,
    opm_server: Callable[[Path], OpmServer],
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    opm, ours, directory = _pair(name, opm_server, pivoter_server)
    catalog = load_directory(directory, use_cache=False)

    listed = opm.call("ListPackages")
    _same(listed, ours.call("ListPackages"), ordered=False)
    assert sorted(m.name for m in listed.messages) == sorted(p.name for p in catalog.packages)

    bundles = opm.call("ListBundles")
    assert bundles.messages, "opm serves no bundle: the test would compare nothing"
    _same(bundles, ours.call("ListBundles"))  # opm's order is deterministic (cache key order)

    for pkg in [*catalog.packages, None]:
        pkg_name = pkg.name if pkg else "no-such-package"
        _same(opm.call("GetPackage", name=pkg_name), ours.call("GetPackage", name=pkg_name))

    replaced: set[str] = set()
    for channel in catalog.channels:
        for query in (
            {"pkgName": channel.package, "channelName": channel.name},
            {"pkgName": channel.package, "channelName": "no-such-channel"},
            {"pkgName": "no-such-package", "channelName": channel.name},
        ):
            _same(
                opm.call("GetBundleForChannel", **query), ours.call("GetBundleForChannel", **query)
            )
        for entry in [*channel.entries, None]:
            csv = entry.name if entry else "no-such-bundle"
            query = {"pkgName": channel.package, "channelName": channel.name, "csvName": csv}
            _same(opm.call("GetBundle", **query), ours.call("GetBundle", **query))
            if entry:
                replaced.update([entry.replaces, *entry.skips] if entry.replaces else entry.skips)
    for csv in sorted(replaced | {b.name for b in catalog.bundles} | {"no-such-bundle"}):
        _same(
            opm.call("GetChannelEntriesThatReplace", csvName=csv),
            ours.call("GetChannelEntriesThatReplace", csvName=csv),
            ordered=False,
        )

    gvks = {(g.group, g.version, g.kind) for b in catalog.bundles for g in b.provided_apis}
    gvks.add(("example.com", "v1", "Missing"))
    for group, version, kind in sorted(gvks):
        query = {"group": group, "version": version, "kind": kind, "plural": "ignored"}
        for method in ("GetChannelEntriesThatProvide", "GetLatestChannelEntriesThatProvide"):
            _same(opm.call(method, **query), ours.call(method, **query), ordered=False)
        _same(
            opm.call("GetDefaultBundleThatProvides", **query),
            ours.call("GetDefaultBundleThatProvides", **query),
        )
    opm.close()
    ours.close()


@pytest.mark.parametrize("name", CATALOGS)
def test_bundle_that_replaces_keeps_the_contract(
    name: str,
    opm_server: Callable[[Path], OpmServer],
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    opm, ours, directory = _pair(name, opm_server, pivoter_server)
    catalog = load_directory(directory, use_cache=False)
    checked = 0
    for channel in catalog.channels:
        targets = {t for e in channel.entries for t in ([e.replaces, *e.skips]) if t}
        for target in sorted(targets | {"no-such-bundle"}):
            query = {"csvName": target, "pkgName": channel.package, "channelName": channel.name}
            theirs, mine = (
                opm.call("GetBundleThatReplaces", **query),
                ours.call("GetBundleThatReplaces", **query),
            )
            candidates = {
                e.name for e in channel.entries if e.replaces == target or target in e.skips
            }
            if not candidates:
                _same(theirs, mine)
                continue
            checked += 1
            for answer in (theirs, mine):
                assert answer.code is None, answer
                (bundle,) = answer.messages
                assert bundle.csvName in candidates
                assert bundle.channelName == channel.name
                assert (bundle.replaces, list(bundle.skips)) == ("", [])
            if len(candidates) == 1:
                _same(theirs, mine)
            else:  # same bundle message as GetBundle of our pick gives from opm
                (bundle,) = mine.messages
                _same(
                    opm.call(
                        "GetBundle",
                        pkgName=channel.package,
                        channelName=channel.name,
                        csvName=bundle.csvName,
                    ),
                    mine,
                )
    if any(e.replaces or e.skips for c in catalog.channels for e in c.entries):
        assert checked
    opm.close()
    ours.close()


def test_custom_schema_rpc_matches_opm(
    opm_server: Callable[[Path], OpmServer],
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    opm, ours, _ = _pair("crafted", opm_server, pivoter_server)
    cases = [
        ("io.example.lifecycle", "etcd"),
        ("io.example.lifecycle", ""),
        ("io.example.notes", ""),
        ("io.example.notes", "etcd"),
        ("io.example.missing", "etcd"),
        ("", "etcd"),
        ("../escape", "etcd"),
        ("io.example.lifecycle", "../etc"),
    ]
    found = 0
    for schema, package in cases:
        theirs = opm.custom_schemas(schema, package)
        _same(theirs, ours.custom_schemas(schema, package))
        found += len(theirs.messages)
        # Without the acknowledgement header both answer with an empty stream.
        _same(
            opm.custom_schemas(schema, package, acknowledge=False),
            ours.custom_schemas(schema, package, acknowledge=False),
        )
    assert found == 2  # the lifecycle object and the package-less notes
    assert opm.custom_schemas("", "etcd").code == grpc.StatusCode.INVALID_ARGUMENT
    opm.close()
    ours.close()
