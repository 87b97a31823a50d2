"""Time until ``pivoter catalog serve`` answers, against ``opm serve``, cold and warm.

For each catalog, interleaved round by round (the server that goes first alternates), four
starts are timed from ``exec`` to the first answered ``ListPackages`` call (what a client, or a
CatalogSource's readiness probe, waits for):

* **opm cold**: ``opm serve DIR`` with no cache directory (it builds its cache in a temporary
  directory before serving, as a CatalogSource pod without a pre-built cache does);
* **opm warm**: ``opm serve DIR --cache-dir C`` with ``C`` pre-built by
  ``opm serve DIR --cache-dir C --cache-only`` (what catalog images ship);
* **pivoter cold**: ``pivoter catalog serve DIR`` with an empty parsed-catalog cache
  (``PIVOTER_CACHE`` pointing at a new directory each round);
* **pivoter warm**: the same with the cache left by an earlier start.

pivoter also serves catalogd's HTTP API from the same process: the time until ``/api/v1/all``
answers is reported beside (pivoter only, warm and cold). Then one whole ``ListBundles`` stream is
read and the time from ``exec`` to its end reported too (pivoter builds its ListBundles messages
when first asked; opm reads them from its cache). After that, the RSS of each server is read from
/proc (VmRSS, VmHWM). Medians over ``--runs``.

Run: ``python bench/catalog_serve_start.py [--runs 5] [DIR ...]`` (default: every catalog of
../shared/catalogs that both servers serve; opm from ``hack/tools.sh opm``). Prints a Markdown
table, with the machine's load before and after.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.shared import CATALOGS as SHARED
from bench.shared import need
from resolver.catalog.registryapi import registry_pb2 as api

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [
    SHARED / "community-operators-prod-v4.20",
    SHARED / "certified-operators-v4.20",
    SHARED / "community-operators-prod-v4.16",
]
TOOLS = Path(os.environ.get("PIVOTER_TOOLS_DIR", Path.home() / ".cache" / "pivoter" / "bin"))
MODES = ("opm cold", "opm warm", "pivoter cold", "pivoter warm")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mib(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


@dataclass
class Start:
    grpc_ready: float
    http_ready: float | None
    listed: float
    """Seconds from exec to the end of the first whole ListBundles stream."""
    rss: float
    hwm: float


def _list_bundles(port: int) -> int:
    channel = grpc.insecure_channel(
        f"127.0.0.1:{port}", options=[("grpc.max_receive_message_length", 1 << 28)]
    )
    try:
        call = channel.unary_stream(
            "/api.Registry/ListBundles",
            request_serializer=api.ListBundlesRequest.SerializeToString,
            response_deserializer=None,  # raw bytes: the client's decoding is not timed
        )
        return sum(1 for _ in call(api.ListBundlesRequest(), timeout=600))
    finally:
        channel.close()


def _list_packages(port: int, deadline: float) -> None:
    """Call ListPackages until it answers (the server may not listen yet)."""
    while True:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        try:
            call = channel.unary_stream(
                "/api.Registry/ListPackages",
                request_serializer=api.ListPackageRequest.SerializeToString,
                response_deserializer=api.PackageName.FromString,
            )
            names = list(call(api.ListPackageRequest(), timeout=5, wait_for_ready=False))
            assert names, "no packages"
            return
        except grpc.RpcError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)
        finally:
            channel.close()


def _http_all(port: int, name: str, deadline: float) -> None:
    url = f"http://127.0.0.1:{port}/catalogs/{name}/api/v1/all"
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                assert r.status == 200
                r.read()
                return
        except urllib.error.HTTPError:
            raise
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def start(mode: str, directory: Path, opm_cache: Path, pivoter_cache: Path) -> Start:
    grpc_port = free_port()
    http_port = free_port() if mode.startswith("pivoter") else None
    env = dict(os.environ)
    if mode == "opm cold":
        command = [str(TOOLS / "opm"), "serve", str(directory), "-p", str(grpc_port)]
    elif mode == "opm warm":
        command = [str(TOOLS / "opm"), "serve", str(directory), "-p", str(grpc_port)]
        command += ["--cache-dir", str(opm_cache)]
    else:
        command = [sys.executable, "-m", "pivoter.cli.main", "catalog", "serve", str(directory)]
        command += ["--grpc-port", str(grpc_port), "--http-port", str(http_port)]
        env["PIVOTER_CACHE"] = str(pivoter_cache)
    if mode.startswith("opm"):
        command += ["--pprof-addr", f"127.0.0.1:{free_port()}", "--termination-log", os.devnull]
    started = time.monotonic()
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        deadline = started + 300
        _list_packages(grpc_port, deadline)
        grpc_ready = time.monotonic() - started
        http_ready = None
        if http_port is not None:
            _http_all(http_port, directory.name, deadline)
            http_ready = time.monotonic() - started
        assert _list_bundles(grpc_port) > 0
        listed = time.monotonic() - started
        rss, hwm = rss_mib(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)
    return Start(grpc_ready, http_ready, listed, rss, hwm)


def bench(directory: Path, runs: int, work: Path) -> dict[str, list[Start]]:
    opm_cache = work / "opm-cache"
    shutil.rmtree(opm_cache, ignore_errors=True)
    prebuild = [str(TOOLS / "opm"), "serve", str(directory), "--cache-dir", str(opm_cache)]
    prebuild += ["--cache-only", "--termination-log", os.devnull]
    subprocess.run(prebuild, check=True, capture_output=True)
    warm_cache = work / "pivoter-warm"
    shutil.rmtree(warm_cache, ignore_errors=True)
    start("pivoter warm", directory, opm_cache, warm_cache)  # fills the cache
    results: dict[str, list[Start]] = {mode: [] for mode in MODES}
    for round_ in range(runs):
        order = MODES if round_ % 2 == 0 else tuple(reversed(MODES))
        for mode in order:
            cache = warm_cache
            if mode == "pivoter cold":
                cache = Path(tempfile.mkdtemp(dir=work, prefix="cold-"))
            results[mode].append(start(mode, directory, opm_cache, cache))
            if mode == "pivoter cold":
                shutil.rmtree(cache)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("dirs", nargs="*", type=Path, default=DEFAULT)
    args = parser.parse_args()
    need(*args.dirs)
    load_before = os.getloadavg()[0]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, python "
        f"{sys.version.split()[0]}; medians of {args.runs} runs, interleaved\n"
    )
    print(
        "| catalog | opm cold | pivoter cold (gRPC / HTTP) | opm warm | pivoter warm (gRPC / "
        "HTTP) | warm pivoter / opm | first ListBundles done, warm: opm / pivoter "
        "| RSS MiB opm warm / pivoter warm | peak MiB opm cold / pivoter cold |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for directory in args.dirs:
            r = bench(directory, args.runs, Path(tmp))

            def med(mode: str, attr: str, rows: dict[str, list[Start]] = r) -> float:
                return statistics.median(float(getattr(s, attr) or 0) for s in rows[mode])

            print(
                f"| {directory.name} | {med('opm cold', 'grpc_ready'):.2f} s "
                f"| {med('pivoter cold', 'grpc_ready'):.2f} / "
                f"{med('pivoter cold', 'http_ready'):.2f} s "
                f"| {med('opm warm', 'grpc_ready'):.2f} s "
                f"| {med('pivoter warm', 'grpc_ready'):.2f} / "
                f"{med('pivoter warm', 'http_ready'):.2f} s "
                f"| {med('pivoter warm', 'grpc_ready') / med('opm warm', 'grpc_ready'):.2f}x "
                f"| {med('opm warm', 'listed'):.2f} / {med('pivoter warm', 'listed'):.2f} s "
                f"| {med('opm warm', 'rss'):.0f} / {med('pivoter warm', 'rss'):.0f} "
                f"| {med('opm cold', 'hwm'):.0f} / {med('pivoter cold', 'hwm'):.0f} |",
                flush=True,
            )
    print(f"\nLoad average (1 min): {load_before:.1f} before, {os.getloadavg()[0]:.1f} after.")


if __name__ == "__main__":
    main()
