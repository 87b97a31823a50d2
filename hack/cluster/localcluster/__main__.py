"""Command line for the local control plane, used by hack/cluster-up.sh and hack/cluster-down.sh.

    python -m localcluster up [--root DIR] [--port N] [--no-kwok] [--watch-cache]
    python -m localcluster down [--root DIR]
    python -m localcluster status [--root DIR]
    python -m localcluster user-kubeconfig USER [GROUP ...] [--root DIR]
    python -m localcluster compact [--root DIR]

Exit codes: 0 ok, 1 failure (the message says why).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .cluster import ClusterConfig, LocalCluster, default_binary, destroy, running_components
from .processes import ClusterError


def _default_root() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pivoter"
    return Path(
        os.environ.get(
            "PIVOTER_CLUSTER_DIR", Path(os.environ.get("PIVOTER_CACHE", cache)) / "cluster"
        )
    )


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run one action, and return the exit code."""
    parser = argparse.ArgumentParser(prog="localcluster", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=_default_root(), help="cluster directory")
    sub = parser.add_subparsers(dest="action", required=True)
    up = sub.add_parser("up", help="start a cluster and print its admin kubeconfig path")
    up.add_argument("--port", type=int, default=0, help="apiserver port (default: a free one)")
    up.add_argument("--no-kwok", action="store_true", help="no simulated nodes")
    up.add_argument("--watch-cache", action="store_true", help="enable the apiserver watch cache")
    up.add_argument("--compaction-interval", default="5m", help="apiserver etcd compaction")
    up.add_argument("--binary", type=Path, default=default_binary())
    sub.add_parser("down", help="stop the cluster and delete its directory")
    sub.add_parser("status", help="show which components run")
    user = sub.add_parser("user-kubeconfig", help="mint a kubeconfig for a user and groups")
    user.add_argument("user")
    user.add_argument("groups", nargs="*")
    sub.add_parser("compact", help="compact etcd at its current revision; print the revision")
    args = parser.parse_args(argv)
    root: Path = args.root.resolve()

    try:
        if args.action == "up":
            config = ClusterConfig(
                binary=args.binary,
                kwok=not args.no_kwok,
                apiserver_port=args.port,
                watch_cache=args.watch_cache,
                etcd_compaction_interval=args.compaction_interval,
            )
            cluster = LocalCluster.start(root, config)
            print(f"cluster up: {cluster.server} (logs in {cluster.logs_dir})", file=sys.stderr)
            print(cluster.kubeconfig)
        elif args.action == "down":
            stopped = destroy(root)
            print(f"stopped {', '.join(stopped) or 'nothing'}; removed {root}", file=sys.stderr)
        elif args.action == "status":
            running = running_components(root)
            if not running:
                print(f"no cluster running in {root}")
                return 1
            for name, pid in running.items():
                print(f"{name}\tpid {pid}")
        elif args.action == "user-kubeconfig":
            print(LocalCluster.attach(root).user_kubeconfig(args.user, args.groups))
        elif args.action == "compact":
            print(LocalCluster.attach(root).compact_etcd())
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
