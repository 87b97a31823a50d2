"""The cost of one catalog poll, per source kind, over a real catalog served by
``pivoter catalog serve``.

For each catalog directory: copy it to a temporary directory, serve the copy with
``pivoter catalog serve`` (a subprocess), put a byte-counting TCP relay (another process) in front
of each port, and poll through the Catalog controller's own code (:class:`pivoter.catalogs.Poller`
on the source :func:`pivoter.catalogs.build_source` makes from a Catalog spec):

* **cold**: the first poll of a new source (fetch, content digest, validation, cache insert);
* **unchanged**: a poll of the same source when nothing changed (the steady state: gRPC refetches
  everything and compares the source digest; HTTP sends ``If-Modified-Since`` and gets a 304);
* **changed**: a poll after a small edit (one package added), once the server has reloaded.

Reported: wall time and CPU time of the polling process (median of ``--runs``), and bytes on the
wire in both directions (from the relay). Run: ``python bench/catalog_poll.py [--runs 5] [DIR ...]``
(defaults: certified-operators-v4.20 and community-operators-prod-v4.20 from ../shared).
Writes a markdown table to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import multiprocessing.sharedctypes
import os
import platform
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.shared import CATALOGS as SHARED
from bench.shared import need
from pivoter.catalogs import CatalogCache, Poller, SourceSettings, build_source
from pivoter.catalogs.digest import content_digest
from resolver.catalog.load import load_directory
from resolver.catalog.validate import validate

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [SHARED / "certified-operators-v4.20", SHARED / "community-operators-prod-v4.20"]

EXTRA = """---
schema: olm.package
name: bench-extra
defaultChannel: stable
---
schema: olm.channel
name: stable
package: bench-extra
entries:
  - name: bench-extra.v1.0.0
---
schema: olm.bundle
name: bench-extra.v1.0.0
package: bench-extra
image: registry.example/bench-extra:1.0.0
properties:
  - type: olm.package
    value:
      packageName: bench-extra
      version: 1.0.0
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _relay(listen: int, target: int, counter: Any) -> None:
    """Forward every connection on ``listen`` to ``target``, adding the bytes to ``counter``."""
    server = socket.create_server(("127.0.0.1", listen))
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ, None)
    while True:
        for key, _ in selector.select():
            if key.data is None:
                client, _ = server.accept()
                upstream = socket.create_connection(("127.0.0.1", target))
                selector.register(client, selectors.EVENT_READ, upstream)
                selector.register(upstream, selectors.EVENT_READ, client)
                continue
            source, sink = key.fileobj, key.data
            assert isinstance(source, socket.socket)
            try:
                data = source.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                for s in (source, sink):
                    with contextlib.suppress(KeyError, ValueError):
                        selector.unregister(s)
                    s.close()
                continue
            sink.sendall(data)
            with counter.get_lock():
                counter.value += len(data)


class Relay:
    """A byte-counting TCP relay in its own process."""

    def __init__(self, target: int) -> None:
        self.port = free_port()
        self.counter: Any = multiprocessing.Value("q", 0)
        self.process = multiprocessing.Process(
            target=_relay, args=(self.port, target, self.counter), daemon=True
        )
        self.process.start()

    def bytes(self) -> int:
        with self.counter.get_lock():
            return int(self.counter.value)

    def stop(self) -> None:
        self.process.terminate()
        self.process.join()


def measure(poll: Callable[[], object], relay: Relay) -> tuple[float, float, int]:
    before = relay.bytes()
    wall, cpu = time.perf_counter(), time.process_time()
    poll()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    time.sleep(0.2)  # let the relay count the last bytes
    return wall, cpu, relay.bytes() - before


def wait_serving(process: subprocess.Popen[bytes], lines: int) -> None:
    assert process.stderr is not None
    seen = 0
    while seen < lines:
        line = process.stderr.readline().decode()
        if not line:
            raise RuntimeError(
                "pivoter catalog serve exited before serving: "
                + process.stderr.read().decode(errors="replace")[-2000:]
            )
        if "serving" in line:
            seen += 1


def bench(directory: Path, runs: int) -> list[tuple[str, str, tuple[float, float, int]]]:
    rows: list[tuple[str, str, tuple[float, float, int]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-poll-") as scratch:
        served = Path(scratch) / directory.name
        shutil.copytree(directory, served)
        grpc_port, http_port = free_port(), free_port()
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pivoter.cli.main",
                "catalog",
                "serve",
                str(served),
                "--name",
                "bench",
                "--grpc-port",
                str(grpc_port),
                "--http-port",
                str(http_port),
                "--poll-interval",
                "0.5",
            ],
            stderr=subprocess.PIPE,
        )
        relays = {"grpc": Relay(grpc_port), "http": Relay(http_port)}
        try:
            wait_serving(server, 2)
            specs = {
                "grpc": {"type": "grpc", "grpc": {"address": f"127.0.0.1:{relays['grpc'].port}"}},
                "http": {
                    "type": "http",
                    "http": {"url": f"http://127.0.0.1:{relays['http'].port}/catalogs/bench"},
                },
            }
            settings = SourceSettings(workdir=Path(scratch) / "work", deadline=600.0)
            pollers: dict[str, tuple[Poller, CatalogCache]] = {}
            for kind, spec in specs.items():
                cold = []
                for _ in range(runs):
                    cache = CatalogCache()
                    built = build_source("bench", spec, lambda _k, _n: None, settings)
                    poller = Poller("bench", built)
                    cold.append(measure(lambda p=poller, c=cache: p.poll(c, 0), relays[kind]))
                    pollers[kind] = (poller, cache)
                rows.append((kind, "cold", _median(cold)))
                poller, cache = pollers[kind]
                warm = [
                    measure(lambda p=poller, c=cache: p.poll(c, 0), relays[kind])
                    for _ in range(runs)
                ]
                rows.append((kind, "unchanged", _median(warm)))
            (served / "bench-extra.yaml").write_text(EXTRA)
            time.sleep(1.5)  # Last-Modified has one-second resolution; the server polls at 0.5 s
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                # wait for the reload: the HTTP body grows
                probe = CatalogCache()
                built = build_source("probe", specs["http"], lambda _k, _n: None, settings)
                Poller("probe", built, validate=False).poll(probe, 0)
                entry = probe.get("probe")
                if entry is not None and any(
                    p.name == "bench-extra" for p in entry.catalog.packages
                ):
                    break
                time.sleep(0.5)
            for kind in specs:
                poller, cache = pollers[kind]
                outcome = []

                def changed(p: Poller = poller, c: CatalogCache = cache) -> None:
                    result = p.poll(c, 0)
                    assert result.changed, result.problem

                outcome.append(measure(changed, relays[kind]))
                rows.append((kind, "changed", outcome[0]))
        finally:
            server.terminate()
            server.wait()
            for relay in relays.values():
                relay.stop()
    return rows


def _median(samples: list[tuple[float, float, int]]) -> tuple[float, float, int]:
    return (
        statistics.median(s[0] for s in samples),
        statistics.median(s[1] for s in samples),
        int(statistics.median(s[2] for s in samples)),
    )


def breakdown(directory: Path) -> tuple[float, float]:
    catalog = load_directory(directory, use_cache=False)
    started = time.perf_counter()
    content_digest(catalog)
    digest = time.perf_counter() - started
    started = time.perf_counter()
    validate(catalog)
    return digest, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("directories", nargs="*", type=Path, default=DEFAULT)
    args = parser.parse_args()
    need(*args.directories)
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, median of {args.runs} runs\n"
    )
    print("| catalog | source | poll | wall s | CPU s | bytes on the wire |")
    print("|---|---|---|---|---|---|")
    for directory in args.directories:
        for kind, what, (wall, cpu, size) in bench(directory, args.runs):
            print(f"| {directory.name} | {kind} | {what} | {wall:.3f} | {cpu:.3f} | {size:,} |")
    print("\n| catalog | content digest s | validation s |")
    print("|---|---|---|")
    for directory in args.directories:
        digest, checks = breakdown(directory)
        print(f"| {directory.name} | {digest:.3f} | {checks:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
