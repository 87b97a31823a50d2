"""Publish the demo catalog: push plain+v0 bundle images to a registry and write the FBC that
``pivoter catalog serve`` serves. Used by hack/demo.sh; reuses the test suite's OCI pusher.

    python hack/demo/publish.py STEP --registry 127.0.0.1:5000 --dir DIR

STEP 1: greeter 1.0.0 (needs greeter-db), greeter-db 1.0.0, hello 1.0.0.
STEP 2: adds greeter 1.1.0 (replaces 1.0.0).
STEP 3: adds greeter 1.2.0, broken: it installs an object of a kind no CRD provides.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.inputs.helpers import Publisher, Version, config_map, missing_kind
from tests.provisioners.oci import Pusher

NAMESPACE = "demo-apps"


def _greeter(version: str, replaces: str = "", broken: bool = False) -> Version:
    manifests = config_map("greeter", NAMESPACE, greeting=f"hello from greeter {version}")
    if broken:
        manifests += "---\n" + missing_kind("greeter-extra", NAMESPACE)
    return Version(version, manifests, replaces=replaces, requires=(("greeter-db", ">=1.0.0"),))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", type=int, choices=(1, 2, 3))
    parser.add_argument("--registry", required=True, help="host:port of a plain-http registry")
    parser.add_argument("--dir", type=Path, required=True, help="the served catalog directory")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    publisher = Publisher(Pusher(f"http://{args.registry}"), args.registry, args.dir)
    db = config_map("greeter-db", NAMESPACE, engine="in-memory")
    publisher.add("greeter-db", Version("1.0.0", db))
    publisher.add("hello", Version("1.0.0", config_map("hello", NAMESPACE, hello="world")))
    publisher.add("greeter", _greeter("1.0.0"))
    if args.step >= 2:
        publisher.add("greeter", _greeter("1.1.0", replaces="1.0.0"))
    if args.step >= 3:
        publisher.add("greeter", _greeter("1.2.0", replaces="1.1.0", broken=True))
    publisher.publish()
    versions = {p: [v.version for v in vs] for p, vs in publisher.packages.items()}
    print(f"published step {args.step}: {versions}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
