"""Time every ``api.Registry`` RPC of ``pivoter catalog serve`` against ``opm serve``.

For each catalog: pre-build opm's serve cache (``opm serve DIR --cache-dir C --cache-only``, so
opm's start is not measured), start ``opm serve DIR --cache-dir C`` and ``pivoter catalog serve
DIR`` on free 127.0.0.1 ports, pick the arguments of every RPC from the catalog itself (a
fixed-seed sample of real packages, channels, bundles, replaced names and GVKs), check that both
servers give the same answers to them (the comparisons of tests/wire: deterministic bytes of each
message, streams opm orders by Go map iteration compared as multisets), then time each call on
both servers, interleaved (the server that goes first alternates), ``--repeats`` times. A call's
time is client round trip with the answer left as raw bytes (no client-side decoding, the same
for both). Finally reads VmRSS/VmHWM of both processes.

Run: ``python bench/catalog_rpc.py [--repeats 20] [--sample 8] [--seed 1] [DIR ...]``
(default: every catalog under ../shared/catalogs that opm serves; opm from hack/tools.sh
opm). Writes markdown tables to stdout: median and p90 milliseconds per call, the ratio of
medians (pivoter / opm; under 1 means pivoter is faster) and the RSS.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.shared import CATALOGS as SHARED
from bench.shared import need
from resolver.catalog import model
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import load_directory
from resolver.catalog.registryapi import registry_pb2 as api

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [
    SHARED / "community-operators-prod-v4.20",
    SHARED / "certified-operators-v4.20",
    SHARED / "community-operators-prod-v4.16",
    SHARED / "community-operators-prod-derived",
    SHARED / "operator-registry-testdata/alpha/action/testdata/index-declcfgs/latest",
    SHARED / "operator-registry-testdata/fbc-dir/file-based-catalog",
    SHARED / "catalogd-testdata/test-catalog",
]
TOOLS = Path(os.environ.get("PIVOTER_TOOLS_DIR", Path.home() / ".cache" / "pivoter" / "bin"))
SERVERS = ("opm", "pivoter")

# method -> (request type, response type, server streaming, stream order is opm's map order)
METHODS: dict[str, tuple[Any, Any, bool, bool]] = {
    "ListPackages": (api.ListPackageRequest, api.PackageName, True, True),
    "GetPackage": (api.GetPackageRequest, api.Package, False, False),
    "GetBundle": (api.GetBundleRequest, api.Bundle, False, False),
    "GetBundleForChannel": (api.GetBundleInChannelRequest, api.Bundle, False, False),
    "GetChannelEntriesThatReplace": (api.GetAllReplacementsRequest, api.ChannelEntry, True, True),
    "GetChannelEntriesThatProvide": (api.GetAllProvidersRequest, api.ChannelEntry, True, True),
    "GetLatestChannelEntriesThatProvide": (
        api.GetLatestProvidersRequest,
        api.ChannelEntry,
        True,
        True,
    ),
    "GetDefaultBundleThatProvides": (api.GetDefaultProviderRequest, api.Bundle, False, False),
    "GetBundleThatReplaces": (api.GetReplacementRequest, api.Bundle, False, False),
    "ListBundles": (api.ListBundlesRequest, api.Bundle, True, False),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kib(pid: int) -> tuple[int, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def pick_calls(catalog: model.Catalog, sample: int, seed: int) -> dict[str, list[dict[str, str]]]:
    """The requests of every RPC, drawn with a fixed seed from what the catalog holds."""
    rng = random.Random(seed)

    def some(items: Sequence[Any]) -> list[Any]:
        items = sorted(items)
        return rng.sample(items, min(sample, len(items)))

    memberships = [(c.package, c.name, e.name) for c in catalog.channels for e in c.entries]
    replaced = {t for c in catalog.channels for e in c.entries for t in (e.replaces, *e.skips) if t}
    # GetBundleThatReplaces: only (name, channel) pairs with one candidate, where opm's answer is
    # not a random pick, so the answers can be compared.
    single: list[tuple[str, str, str]] = []
    for c in catalog.channels:
        count: dict[str, int] = {}
        for e in c.entries:
            for t in {e.replaces, *e.skips} - {""}:
                count[t] = count.get(t, 0) + 1
        single.extend((t, c.package, c.name) for t, n in count.items() if n == 1)
    gvks = {(g.group, g.version, g.kind) for b in catalog.bundles for g in b.provided_apis}
    return {
        "ListPackages": [{}],
        "GetPackage": [{"name": p} for p in some([p.name for p in catalog.packages])],
        "GetBundle": [
            {"pkgName": p, "channelName": c, "csvName": b} for p, c, b in some(memberships)
        ],
        "GetBundleForChannel": [
            {"pkgName": p, "channelName": c}
            for p, c in some([(c.package, c.name) for c in catalog.channels])
        ],
        "GetChannelEntriesThatReplace": [{"csvName": n} for n in some(list(replaced))],
        "GetChannelEntriesThatProvide": [_gvk(g) for g in some(list(gvks))],
        "GetLatestChannelEntriesThatProvide": [_gvk(g) for g in some(list(gvks))],
        "GetDefaultBundleThatProvides": [_gvk(g) for g in some(list(gvks))],
        "GetBundleThatReplaces": [
            {"csvName": n, "pkgName": p, "channelName": c} for n, p, c in some(single)
        ],
        "ListBundles": [{}],
    }


def _gvk(gvk: tuple[str, str, str]) -> dict[str, str]:
    group, version, kind = gvk
    return {"group": group, "version": version, "kind": kind, "plural": "ignored"}


class Client:
    """Calls on one server: timed (raw bytes) or decoded (for the comparison)."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.insecure_channel(
            target, options=[("grpc.max_receive_message_length", 1 << 28)]
        )
        grpc.channel_ready_future(self.channel).result(timeout=300)
        self.raw: dict[str, Callable[..., Any]] = {}
        self.decoded: dict[str, Callable[..., Any]] = {}
        for method, (request, response, streaming, _) in METHODS.items():
            make = self.channel.unary_stream if streaming else self.channel.unary_unary
            path = f"/api.Registry/{method}"
            self.raw[method] = make(
                path, request_serializer=request.SerializeToString, response_deserializer=None
            )
            self.decoded[method] = make(
                path,
                request_serializer=request.SerializeToString,
                response_deserializer=response.FromString,
            )

    def timed(self, method: str, fields: dict[str, str]) -> float:
        request = METHODS[method][0](**fields)
        streaming = METHODS[method][2]
        started = time.perf_counter()
        try:
            if streaming:
                for _ in self.raw[method](request, timeout=300):
                    pass
            else:
                self.raw[method](request, timeout=300)
        except grpc.RpcError:
            pass
        return time.perf_counter() - started

    def answer(self, method: str, fields: dict[str, str]) -> tuple[Any, ...]:
        """A comparable form of the answer (as tests/wire/rpc.py ``Answer.key``)."""
        request_type, _, streaming, unordered = METHODS[method]
        try:
            result = self.decoded[method](request_type(**fields), timeout=300)
            messages = list(result) if streaming else [result]
        except grpc.RpcError as err:
            return (err.code(), err.details(), ())
        wire = [m.SerializeToString(deterministic=True) for m in messages]
        return (None, "", tuple(sorted(wire) if unordered else wire))


@dataclass
class Servers:
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    clients: dict[str, Client] = field(default_factory=dict)

    def stop(self) -> None:
        for client in self.clients.values():
            client.channel.close()
        for process in self.processes.values():
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def start(directory: Path, cache: Path, log: Any) -> Servers:
    built = subprocess.run(
        [str(TOOLS / "opm"), "serve", str(directory), "--cache-dir", str(cache), "--cache-only"],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        raise RuntimeError(f"opm cannot serve {directory}: {built.stderr.strip()[-300:]}")
    servers = Servers()
    opm_port, pivoter_port = free_port(), free_port()
    commands = {
        "opm": [
            str(TOOLS / "opm"),
            "serve",
            str(directory),
            "--cache-dir",
            str(cache),
            "-p",
            str(opm_port),
            "--pprof-addr",
            f"127.0.0.1:{free_port()}",
            "--termination-log",
            os.devnull,
        ],
        "pivoter": [
            sys.executable,
            *os.environ.get("PIVOTER_PYTHON_FLAGS", "").split(),
            "-m",
            "pivoter.cli.main",
            "catalog",
            "serve",
            str(directory),
            "--grpc-port",
            str(pivoter_port),
            "--http-port",
            "0",
            "--poll-interval",
            "3600",
        ],
    }
    ports = {"opm": opm_port, "pivoter": pivoter_port}
    try:
        for server, command in commands.items():
            servers.processes[server] = subprocess.Popen(command, stdout=log, stderr=log)
        for server, port in ports.items():
            servers.clients[server] = Client(f"127.0.0.1:{port}")
    except BaseException:
        servers.stop()
        raise
    return servers


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_catalog(
    directory: Path, args: argparse.Namespace
) -> tuple[dict[str, dict[str, list[float]]], dict[str, tuple[int, int]], list[str], int]:
    catalog = load_directory(directory, use_cache=False)
    calls = pick_calls(catalog, args.sample, args.seed)
    if args.only:
        calls = {m: r for m, r in calls.items() if m in args.only.split(",")}
    with tempfile.TemporaryDirectory() as tmp, (Path(tmp) / "log").open("wb") as log:
        servers = start(directory, Path(tmp) / "cache", log)
        try:
            clients = servers.clients
            mismatches: list[str] = []
            compared = 0
            for method, requests in calls.items():
                for fields in requests:
                    compared += 1
                    theirs = clients["opm"].answer(method, fields)
                    ours = clients["pivoter"].answer(method, fields)
                    if theirs != ours:
                        mismatches.append(f"{method}({fields})")
            times: dict[str, dict[str, list[float]]] = {m: {s: [] for s in SERVERS} for m in calls}
            for repeat in range(args.repeats):
                order = SERVERS if repeat % 2 == 0 else SERVERS[::-1]
                for method, requests in calls.items():
                    if method == "ListBundles" and repeat >= args.list_repeats:
                        continue
                    for fields in requests:
                        for server in order:
                            times[method][server].append(clients[server].timed(method, fields))
            memory = {s: rss_kib(servers.processes[s].pid) for s in SERVERS}
        finally:
            servers.stop()
    return times, memory, mismatches, compared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20, help="rounds of every call")
    parser.add_argument(
        "--list-repeats", type=int, default=10, help="rounds of ListBundles (at most --repeats)"
    )
    parser.add_argument("--sample", type=int, default=8, help="arguments per RPC")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated RPC names to time")
    parser.add_argument("dirs", nargs="*", type=Path, default=DEFAULT)
    args = parser.parse_args()
    need(*args.dirs)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores (shared), "
        f"python {sys.version.split()[0]}; repeats {args.repeats} (ListBundles "
        f"{min(args.list_repeats, args.repeats)}), sample {args.sample}, seed {args.seed}\n"
    )
    failed = False
    for directory in args.dirs:
        try:
            times, memory, mismatches, compared = bench_catalog(directory, args)
        except (RuntimeError, CatalogLoadError) as err:
            reason = str(err).splitlines()[0]
            print(f"## {directory.name}: skipped ({reason})\n")
            continue
        shown = directory.relative_to(SHARED) if directory.is_relative_to(SHARED) else directory
        print(f"## {shown}\n")
        print(
            f"answers compared: {compared}, different: {len(mismatches)}"
            + (": " + "; ".join(mismatches[:5]) if mismatches else "")
            + "\n"
        )
        failed = failed or bool(mismatches)
        print(
            "| RPC | calls | opm median ms | opm p90 ms | pivoter median ms | pivoter p90 ms "
            "| ratio |"
        )
        print("|---|---|---|---|---|---|---|")
        for method, by_server in times.items():
            opm, ours = by_server["opm"], by_server["pivoter"]
            if not opm:
                continue
            o, p = statistics.median(opm) * 1e3, statistics.median(ours) * 1e3
            print(
                f"| {method} | {len(opm)} | {o:.2f} | {percentile(opm, 0.9) * 1e3:.2f} | "
                f"{p:.2f} | {percentile(ours, 0.9) * 1e3:.2f} | {p / o:.2f} |"
            )
        print()
        print("| server | VmRSS MiB | VmHWM MiB |")
        print("|---|---|---|")
        for server in SERVERS:
            rss, hwm = memory[server]
            print(f"| {server} | {rss / 1024:.0f} | {hwm / 1024:.0f} |")
        print(flush=True)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
