"""``pivoter catalog test DIR --live``: walk one upgrade path on a cluster, one pivot per step.

The path is the one ``catalog test`` prints for the chosen entry (the resolver's successor
choice, :meth:`resolver.channeltest.graph.ChannelGraph.path`), from ``--from`` (default: the
lowest version of the channel) to where it ends. This process serves ``DIR`` over HTTP (as
``pivoter catalog serve``), creates a temporary Catalog reading it, and lets
:class:`pivoter.inputs.walk.Walker` drive a temporary Resolution through the versions with
the daemon (``pivoter run``) that watches the cluster; each step's outcome is printed as it
ends. The Resolution (and so what it installed) and the Catalog are deleted at the end.

Exit codes: 0 every step installed, 3 (INVALID) a step did not (or the path cannot be walked),
1 the catalog or the cluster could not be used, 2 bad arguments. Its flags are ``--live`` and
the options after it in ``catalog test --help`` (:func:`add_flags`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pivoter.cli.commands._common import OUTPUT_FORMATS, add_kubeconfig_flag
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Address, Count, HostPort, Seconds, Url, VersionText
from pivoter.cli.output import emit, error

if TYPE_CHECKING:
    from pivoter.inputs.walk import StepOutcome, Walker
    from pivoter.kube import Kube
    from resolver.catalog.model import Catalog

__all__ = ["PathError", "add_flags", "live_path", "run"]

LABEL = "pivoter.io/live-test"


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--live``, which makes :func:`run` the handler of ``catalog test``, and its options."""
    group = parser.add_argument_group("--live: walk an upgrade path on a cluster")
    group.add_argument(
        "--live",
        dest="handler",
        action="store_const",
        const=run,
        help="install --package at --from on the cluster and upgrade along its path, one pivot "
        "per step, with the pivoter daemon running there",
    )
    group.add_argument(
        "--from",
        dest="start",
        metavar="VERSION",
        type=VersionText(what="--from"),
        help="starting version (default: the lowest)",
    )
    add_kubeconfig_flag(group)
    group.add_argument(
        "--serve-address",
        default="127.0.0.1:0",
        type=HostPort("--serve-address"),
        metavar="HOST:PORT",
        help="where this process serves the catalog (default %(default)s, a free port)",
    )
    group.add_argument(
        "--catalog-url",
        metavar="URL",
        type=Url(("http", "https")),
        help="the URL the daemon reads the served catalog at (default: from --serve-address)",
    )
    group.add_argument(
        "--progress-deadline",
        type=Count(),
        default=120,
        metavar="SECONDS",
        help="the temporary Resolution's progressDeadlineSeconds (default %(default)s)",
    )
    group.add_argument(
        "--step-timeout",
        type=Seconds(),
        default=300.0,
        metavar="SECONDS",
        help="give up on a step after this long (default %(default)g)",
    )


class PathError(Exception):
    """The package, channel or starting version asked for does not give a path to walk."""


@dataclass(frozen=True, slots=True)
class LivePath:
    """The versions to install in turn, and where they come from."""

    package: str
    channel: str
    bundles: tuple[str, ...]
    versions: tuple[str, ...]


def live_path(catalog: Catalog, package: str, channel: str = "", start: str = "") -> LivePath:
    """The upgrade path of ``package`` in ``channel`` (default: its default channel) from the
    entry of version ``start`` (default: the lowest version in the channel)."""
    from resolver.channeltest.graph import build_channel_graph
    from resolver.rules.inputs import safe_version

    pkg = catalog.package(package)
    if pkg is None:
        raise PathError(f"package {package} is not in the catalog")
    name = channel or pkg.default_channel
    found = [c for c in catalog.channels if c.package == package and c.name == name]
    if not found:
        raise PathError(f"package {package} has no channel {name or '(no default channel)'}")
    graph = build_channel_graph(catalog, found[0])

    def version_of(entry: str) -> str:
        bundle = catalog.bundle(package, entry)
        if bundle is None or not bundle.version:
            raise PathError(f"entry {entry} of channel {name} has no bundle with a version")
        return bundle.version

    versions = {entry: version_of(entry) for entry in graph.entries}
    if start:
        matches = [entry for entry, v in versions.items() if v == start.removeprefix("v")]
        if not matches:
            raise PathError(
                f"channel {name} of {package} has no entry of version {start} "
                f"(it has {', '.join(sorted(versions.values()))})"
            )
        first = matches[0]
    else:
        first = min(versions, key=lambda e: (safe_version(versions[e]) is None, _key(versions[e])))
    path = graph.path(first)
    if path.cycle:
        raise PathError(f"the path from {first} runs in a cycle: {' -> '.join(path.steps)}")
    bundles = (first, *path.steps)
    return LivePath(package, name, bundles, tuple(versions[b] for b in bundles))


def _key(version: str) -> Any:
    from resolver.rules.inputs import safe_version

    parsed = safe_version(version)
    return parsed if parsed is not None else version


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter catalog test DIR --live``."""
    import secrets

    from pivoter.catalogserver.httpserver import CatalogHTTPServer
    from pivoter.catalogserver.reload import Reloader
    from pivoter.cli.listen import check_bindable
    from pivoter.inputs.walk import Walker
    from pivoter.kube import Kube, KubeConfigError, KubeError, load_client
    from resolver.catalog.errors import CatalogLoadError
    from resolver.channeltest.loading import load_for_test

    try:
        catalog, _ = load_for_test(args.target, use_cache=not args.no_cache)
    except CatalogLoadError as err:
        for problem in err.problems:
            error(str(problem))
        return int(ExitCode.FAILURE)
    if not args.package:
        error("--live needs --package")
        return int(ExitCode.USAGE)
    if args.output not in OUTPUT_FORMATS or args.changed_since or args.changed_files:
        error(
            "--live prints human text, json or yaml; -o github|junit|sarif and --changed-* are "
            "for the checks without --live"
        )
        return int(ExitCode.USAGE)
    try:
        path = live_path(catalog, args.package, args.channel or "", args.start or "")
    except PathError as exc:
        error(str(exc))
        return int(ExitCode.INVALID)
    address: Address = args.serve_address
    try:
        check_bindable(address.host, address.port, "--serve-address")
    except OSError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    try:
        kube = Kube(load_client(args.kubeconfig))
    except KubeConfigError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    human = args.output == "human"
    _say(human, f"walking {path.package}/{path.channel}: {' -> '.join(path.versions)}")
    reloader = Reloader(args.target, name="live")
    reloader.start()
    server = CatalogHTTPServer(
        (address.host, address.port),
        name="live",
        snapshot=lambda: reloader.current,
        metrics=None,
        stale=reloader.stale_reason,
    )
    server.serve_in_thread()
    served = Address(address.host, server.server_address[1])
    url = args.catalog_url or f"http://{served}/catalogs/live"
    catalog_name = f"pivoter-live-{secrets.token_hex(3)}"  # the Resolution's name too
    walker = Walker(
        kube,
        path.package,
        path.channel,
        {LABEL: catalog_name},
        progress_deadline=args.progress_deadline,
        step_timeout=args.step_timeout,
        name=catalog_name,
    )
    outcomes: list[StepOutcome] = []
    try:
        _create_catalog(kube, catalog_name, url, walker.catalog_labels)
        _wait_serving(kube, catalog_name, timeout=60.0)
        _say(human, f"Catalog and Resolution {catalog_name}; the catalog is served at {url}")
        outcomes = walker.walk(path.versions, lambda o: _say(human, _line(o)))
    except (KubeError, TimeoutError) as exc:
        error(f"the live walk stopped: {exc}")
        return int(ExitCode.FAILURE)
    finally:
        _cleanup(kube, walker, catalog_name, human)
        server.shutdown()
        server.server_close()
        reloader.stop()
    walked = all(o.ok for o in outcomes) and len(outcomes) == len(path.versions)
    data = {
        "package": path.package,
        "channel": path.channel,
        "path": list(path.versions),
        "steps": [o.to_dict() for o in outcomes],
        "walked": walked,
    }
    emit(data, args.output, lambda _: _summary(path, outcomes, walked))
    return int(ExitCode.OK if walked else ExitCode.INVALID)


def _say(human: bool, text: str) -> None:
    # Progress goes to stderr with -o json, so stdout stays one document.
    print(text, file=sys.stdout if human else sys.stderr, flush=True)


def _line(o: StepOutcome) -> str:
    what = (
        f"install {o.to_version}" if not o.from_version else f"{o.from_version} -> {o.to_version}"
    )
    revision = f" (revision {o.revision})" if o.revision is not None else ""
    text = f"step {o.step}: {what}: {o.outcome} after {o.seconds:.1f}s{revision}"
    return text if o.ok else f"{text}: {o.message}"


def _summary(path: LivePath, outcomes: list[StepOutcome], walked: bool) -> str:
    if walked:
        return f"walked {len(outcomes)} step(s): {' -> '.join(path.versions)}"
    last = outcomes[-1] if outcomes else None
    where = f"step {last.step} ({last.to_version}) ended {last.outcome}" if last else "no step ran"
    return f"the path was not walked: {where}"


def _create_catalog(kube: Kube, name: str, url: str, labels: Mapping[str, str]) -> None:
    from pivoter.apis import pivoter as api
    from pivoter.apis.resources import CATALOGS

    body = {
        "apiVersion": api.API_VERSION,
        "kind": "Catalog",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {"source": {"type": "http", "http": {"url": url}}, "pollInterval": "5s"},
    }
    kube.create(CATALOGS, body)


def _wait_serving(kube: Kube, name: str, timeout: float) -> None:
    from pivoter.apis import pivoter as api
    from pivoter.apis.conditions import find
    from pivoter.apis.resources import CATALOGS

    deadline = time.monotonic() + timeout
    message = "no status yet"
    while time.monotonic() < deadline:
        status = kube.get(CATALOGS, name).get("status") or {}
        serving = find(status.get("conditions") or [], api.TYPE_SERVING)
        if serving is not None and serving.get("status") == "True":
            return
        if serving is not None:
            message = str(serving.get("message") or serving.get("reason") or message)
        time.sleep(0.5)
    raise TimeoutError(
        f"Catalog {name} did not serve within {timeout:.0f}s ({message}); is pivoter run "
        "running, and can it reach --catalog-url?"
    )


def _cleanup(kube: Kube, walker: Walker, catalog_name: str, human: bool) -> None:
    from pivoter.apis.resources import CATALOGS
    from pivoter.kube import KubeError, NotFound

    try:
        if not walker.delete():
            _say(human, f"Resolution {walker.name} is still being deleted")
        kube.delete(CATALOGS, catalog_name)
    except NotFound:
        pass
    except KubeError as exc:
        error(
            f"cleaning up failed: {exc}; delete Resolution {walker.name} and Catalog "
            f"{catalog_name} by hand"
        )
