"""The floor of a unary gRPC call answered by Python's grpcio, against opm's Go server.

Three servers on loopback, each in its own process, answer ``GetPackage`` to the same Python
client, interleaved round by round:

* **grpcio floor**: a bare ``grpc.server`` (the sync server with a thread pool, as ``pivoter
  catalog serve`` runs it) whose handler returns a constant, already serialized answer: nothing
  is looked up, built or encoded. No Python server can answer a unary call faster than this;
* **opm serve** on the catalog;
* **pivoter catalog serve** on the same catalog.

Per call: median over ``--rounds`` rounds of the mean of ``--calls`` calls (after a warm-up of
50). Run: ``python bench/grpc_floor.py [--rounds 9] [--calls 300] [DIR]`` (default
community-operators-prod-v4.20; opm from ``hack/tools.sh opm``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.shared import CATALOGS, need
from resolver.catalog.registryapi import registry_pb2 as api

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = CATALOGS / "community-operators-prod-v4.20"
TOOLS = Path(os.environ.get("PIVOTER_TOOLS_DIR", Path.home() / ".cache" / "pivoter" / "bin"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bare_server(port: int, answer: bytes) -> None:
    """The floor: a sync grpcio server answering every GetPackage with ``answer``."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    handler = grpc.unary_unary_rpc_method_handler(
        lambda request, context: answer,
        request_deserializer=api.GetPackageRequest.FromString,
        response_serializer=lambda data: data,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("api.Registry", {"GetPackage": handler}),)
    )
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    server.wait_for_termination()


def caller(port: int) -> Callable[[api.GetPackageRequest], bytes]:
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    grpc.channel_ready_future(channel).result(timeout=300)
    call: Callable[[api.GetPackageRequest], bytes] = channel.unary_unary(
        "/api.Registry/GetPackage",
        request_serializer=api.GetPackageRequest.SerializeToString,
        response_deserializer=None,
    )
    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("directory", nargs="?", type=Path, default=DEFAULT)
    args = parser.parse_args()
    need(args.directory)
    package = sorted(p.name for p in args.directory.iterdir() if p.is_dir())[0]
    ports = {"opm serve": free_port(), "pivoter catalog serve": free_port()}
    processes = [
        subprocess.Popen(
            [
                str(TOOLS / "opm"),
                "serve",
                str(args.directory),
                "-p",
                str(ports["opm serve"]),
                "--termination-log",
                os.devnull,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pivoter.cli.main",
                "catalog",
                "serve",
                str(args.directory),
                "--grpc-port",
                str(ports["pivoter catalog serve"]),
                "--http-port",
                "0",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    ]
    try:
        calls = {name: caller(port) for name, port in ports.items()}
        request = api.GetPackageRequest(name=package)
        answer = calls["opm serve"](request)  # the floor answers with opm's bytes
        floor_port = free_port()
        floor = multiprocessing.get_context("spawn").Process(
            target=bare_server, args=(floor_port, answer), daemon=True
        )
        floor.start()
        calls = {"grpcio floor": caller(floor_port), **calls}
        times: dict[str, list[float]] = {name: [] for name in calls}
        for round_ in range(args.rounds):
            names = list(calls) if round_ % 2 == 0 else list(reversed(calls))
            for name in names:
                for _ in range(50):
                    calls[name](request)
                started = time.perf_counter()
                for _ in range(args.calls):
                    calls[name](request)
                times[name].append((time.perf_counter() - started) / args.calls * 1000)
        opm = statistics.median(times["opm serve"])
        print(f"GetPackage {package!r} on {args.directory.name}, {args.rounds} rounds:\n")
        print("| server | ms per call (median) | / opm |")
        print("|---|--:|--:|")
        for name, samples in times.items():
            ms = statistics.median(samples)
            print(f"| {name} | {ms:.3f} | {ms / opm:.2f} |")
        floor.terminate()
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
