"""Resident memory of ``pivoter catalog serve`` vs ``opm serve`` holding the same catalog.

For each catalog: start the server on free 127.0.0.1 ports, wait until gRPC answers, call
ListBundles once (so both have touched every bundle), read VmRSS and VmHWM from /proc, stop it;
repeat N times and report medians. Run: ``python bench/catalog_serve.py [--runs 3] [DIR ...]``
(opm from hack/tools.sh opm). Writes a markdown table to stdout.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.shared import CATALOGS as SHARED
from bench.shared import need
from resolver.catalog.registryapi import registry_pb2 as api

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [SHARED / "certified-operators-v4.20", SHARED / "community-operators-prod-v4.16"]
TOOLS = Path(os.environ.get("PIVOTER_TOOLS_DIR", Path.home() / ".cache" / "pivoter" / "bin"))


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


def measure(command: list[str], port: int) -> tuple[int, int, float]:
    started = time.monotonic()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=log)
        try:
            channel = grpc.insecure_channel(
                f"127.0.0.1:{port}", options=[("grpc.max_receive_message_length", 1 << 28)]
            )
            grpc.channel_ready_future(channel).result(timeout=300)
            ready = time.monotonic() - started
            list_bundles = channel.unary_stream(
                "/api.Registry/ListBundles",
                request_serializer=api.ListBundlesRequest.SerializeToString,
                response_deserializer=api.Bundle.FromString,
            )
            count = sum(1 for _ in list_bundles(api.ListBundlesRequest(), timeout=300))
            assert count > 0
            channel.close()
            rss, hwm = rss_kib(process.pid)
        finally:
            process.terminate()
            process.wait(timeout=30)
    return rss, hwm, ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("dirs", nargs="*", type=Path, default=DEFAULT)
    args = parser.parse_args()
    need(*args.dirs)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores (shared), "
        f"python {sys.version.split()[0]}"
    )
    print(f"runs per cell: {args.runs}; medians\n")
    print("| catalog | server | RSS after ListBundles (MiB) | peak RSS (MiB) | ready after (s) |")
    print("|---|---|---|---|---|")
    for directory in args.dirs:
        for server in ("opm serve", "pivoter catalog serve"):
            results = []
            for _ in range(args.runs):
                port = free_port()
                if server == "opm serve":
                    command = [
                        str(TOOLS / "opm"),
                        "serve",
                        str(directory),
                        "-p",
                        str(port),
                        "--pprof-addr",
                        f"127.0.0.1:{free_port()}",
                        "--termination-log",
                        os.devnull,
                    ]
                else:
                    command = [
                        sys.executable,
                        "-m",
                        "pivoter.cli.main",
                        "catalog",
                        "serve",
                        str(directory),
                        "--grpc-port",
                        str(port),
                        "--http-port",
                        "0",
                    ]
                results.append(measure(command, port))
            rss = statistics.median(r[0] for r in results) / 1024
            hwm = statistics.median(r[1] for r in results) / 1024
            ready = statistics.median(r[2] for r in results)
            print(f"| {directory.name} | {server} | {rss:.0f} | {hwm:.0f} | {ready:.1f} |")


if __name__ == "__main__":
    main()
