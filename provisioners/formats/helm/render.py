"""Run ``helm template`` on a chart: bounded in time and output, isolated from the user's Helm
configuration, with the cluster's version and APIs as capabilities.

The chart's dependencies must be in its ``charts/`` directory (as packaged charts carry them);
nothing is fetched over the network. A template that loops is stopped at the deadline; one that
produces more than the output cap is killed there. Either way the caller gets a
:class:`RenderError` and the previously installed content keeps running.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from provisioners.formats.base import FormatError

__all__ = ["Capabilities", "RenderError", "RenderLimits", "helm_binary", "render_chart"]


class RenderError(FormatError):
    """``helm template`` failed, timed out or produced too much; the message says which."""


@dataclass(frozen=True)
class Capabilities:
    """What the chart sees as ``.Capabilities``: the cluster's version and API versions."""

    kube_version: str = ""
    api_versions: tuple[str, ...] = ()


@dataclass(frozen=True)
class RenderLimits:
    """Bounds on one render."""

    timeout_seconds: float = 60.0
    max_output_bytes: int = 64 << 20


@dataclass(frozen=True)
class _Output:
    data: bytearray = field(default_factory=bytearray)
    overflow: threading.Event = field(default_factory=threading.Event)


def helm_binary() -> str:
    """The helm executable: ``$PIVOTER_HELM``, the tools directory, or ``helm`` on PATH."""
    explicit = os.environ.get("PIVOTER_HELM")
    if explicit:
        return explicit
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pivoter"
    tools = Path(os.environ.get("PIVOTER_TOOLS_DIR", cache / "bin"))
    candidate = tools / "helm"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    found = shutil.which("helm")
    if found is None:
        raise RenderError("the helm binary is not installed (hack/tools.sh helm installs it)")
    return found


def _drain(stream: IO[bytes], out: _Output, cap: int, process: subprocess.Popen[bytes]) -> None:
    while chunk := stream.read(1 << 16):
        if len(out.data) + len(chunk) > cap:
            out.overflow.set()
            process.kill()
            return
        out.data.extend(chunk)


def render_chart(
    chart: Path,
    *,
    release: str,
    namespace: str,
    values: dict[str, Any],
    capabilities: Capabilities | None = None,
    limits: RenderLimits | None = None,
) -> bytes:
    """The rendered manifests of ``chart`` (a YAML stream), or :class:`RenderError`."""
    limits = limits or RenderLimits()
    capabilities = capabilities or Capabilities()
    with tempfile.TemporaryDirectory(prefix="pivoter-helm-") as work:
        values_file = Path(work) / "values.json"
        values_file.write_text(json.dumps(values))  # JSON is YAML, and cannot carry tags
        argv = [
            helm_binary(),
            "template",
            release,
            str(chart),
            "--namespace",
            namespace,
            "--values",
            str(values_file),
            "--include-crds",
            "--skip-tests",
        ]
        if capabilities.kube_version:
            argv += ["--kube-version", capabilities.kube_version]
        for api in capabilities.api_versions:
            argv += ["--api-versions", api]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": work,
            "HELM_CACHE_HOME": f"{work}/cache",
            "HELM_CONFIG_HOME": f"{work}/config",
            "HELM_DATA_HOME": f"{work}/data",
            "HELM_PLUGINS": f"{work}/plugins",
        }
        out, err = _Output(), _Output()
        with subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=work
        ) as process:
            assert process.stdout is not None
            assert process.stderr is not None
            readers = [
                threading.Thread(
                    target=_drain, args=(process.stdout, out, limits.max_output_bytes, process)
                ),
                threading.Thread(target=_drain, args=(process.stderr, err, 1 << 20, process)),
            ]
            for reader in readers:
                reader.start()
            try:
                code = process.wait(timeout=limits.timeout_seconds)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise RenderError(
                    f"helm template did not finish within {limits.timeout_seconds:.0f} s (a "
                    "template that loops?); the chart was not applied"
                ) from None
            finally:
                for reader in readers:
                    reader.join()
        if out.overflow.is_set():
            raise RenderError(
                f"helm template produced more than {limits.max_output_bytes} bytes; the chart "
                "was not applied"
            )
        if code != 0:
            message = err.data.decode(errors="replace").strip() or f"exit code {code}"
            raise RenderError(f"helm template failed: {message[-4000:]}")
        return bytes(out.data)
