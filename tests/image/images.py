"""Building and inspecting pivoter's image with podman, for the tests of ``tests/image``.

Everything goes through ``hack/image/`` (``build.sh``, ``podman.sh``), the same scripts a developer
runs, so the tests build the image exactly as documented in docs/image.md.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PODMAN = REPO / "hack" / "image" / "podman.sh"
BUILD = REPO / "hack" / "image" / "build.sh"
LOCK = REPO / "requirements.lock"

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", re.MULTILINE)


@dataclass(frozen=True)
class BuiltImage:
    """An image built by ``hack/image/build.sh`` and pushed to a test registry."""

    tag: str
    """The local name, ``localhost/pivoter:...``."""
    image_id: str
    pushed: str
    """The same image in the registry, ``127.0.0.1:PORT/pivoter:...``."""
    seconds: float
    """Wall time of the whole build (base, helm, podman build, pushes)."""


def canonical(name: str) -> str:
    """A distribution name normalised as PEP 503 does (``Foo_bar`` -> ``foo-bar``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(lock: Path = LOCK) -> dict[str, str]:
    """``{canonical name: version}`` of every package a lock file pins."""
    return {canonical(name): version for name, version in _PIN.findall(lock.read_text())}


def podman(*args: str, timeout: float = 120.0) -> str:
    """Run ``hack/image/podman.sh ARGS``; return stdout, raise with stderr on failure."""
    result = subprocess.run(
        [str(PODMAN), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result.stdout


def build(tag: str, registry: str, log: Path) -> BuiltImage:
    """Build the image from a clean checkout of HEAD (``$PIVOTER_IMAGE_REVISION`` if set), pushing
    the base and the image to ``registry``; the build's output goes to ``log``."""
    revision = os.environ.get("PIVOTER_IMAGE_REVISION", "HEAD")
    start = time.monotonic()
    with log.open("w") as sink:
        result = subprocess.run(
            [str(BUILD), "--tag", tag, "--revision", revision, "--registry", registry, "--push"],
            stdout=subprocess.PIPE,
            stderr=sink,
            text=True,
            timeout=1500,
            check=False,
        )
    if result.returncode != 0:
        raise AssertionError(f"hack/image/build.sh failed: {log.read_text()[-4000:]}")
    return BuiltImage(
        tag=tag,
        image_id=result.stdout.strip().splitlines()[-1],
        pushed=f"{registry}/{tag.partition('/')[2]}",
        seconds=time.monotonic() - start,
    )


def inspect(reference: str) -> dict[str, object]:
    """``podman image inspect`` of one image."""
    data = json.loads(podman("image", "inspect", reference))
    assert isinstance(data, list)
    assert len(data) == 1
    first = data[0]
    assert isinstance(first, dict)
    return first


def run(
    image: str,
    *args: str,
    entrypoint: str | None = None,
    volumes: tuple[str, ...] = (),
    timeout: float = 120.0,
) -> str:
    """``podman run --rm`` of ``image`` with deploy/'s restrictions (read-only root, no
    capabilities, no privilege escalation, a tmpfs ``/tmp``) and ``volumes`` (``HOST:CONTAINER``,
    read-only); stdout."""
    flags = ["--rm", "--network", "host", "--read-only", "--cap-drop", "ALL", "--tmpfs", "/tmp"]
    flags += ["--security-opt", "no-new-privileges"]
    for volume in volumes:
        flags += ["--volume", f"{volume}:ro"]
    if entrypoint is not None:
        flags += ["--entrypoint", entrypoint]
    return podman("run", *flags, image, *args, timeout=timeout)
