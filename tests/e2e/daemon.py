"""``pivoter run`` as a subprocess for the end-to-end tests and the bundle benchmark.

:class:`Daemon` starts the daemon against a kubeconfig with its content server, its admission
webhook (registered by URL: the daemon runs outside the cluster) and a content store directory,
waits until ``/readyz`` answers, and stops it with SIGTERM. Stopping also removes the
ValidatingWebhookConfiguration the daemon registered, because its ``failurePolicy: Fail`` would
otherwise refuse every Bundle once nobody serves the webhook. With ``hooked=True`` it runs
through the tests' entry point :mod:`tests.e2e.hooked`, which gives ``pivoter run`` the fault
hooks its environment variables ask for. Used by ``tests/e2e/conftest.py``, the tests that kill a
daemon at a step, and ``bench/bundle_install.py``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from pivoter.kube import Kube, NotFound
from pivoter.webhook.registration import NAME as WEBHOOK_CONFIGURATION
from tests.ports import free_port, free_ports

__all__ = ["Daemon", "DaemonError", "free_port", "free_ports"]

WEBHOOK_CONFIGS = "admissionregistration.k8s.io/v1"
REPO = Path(__file__).resolve().parents[2]


class DaemonError(RuntimeError):
    """The daemon did not start or did not stop; the message ends with its log."""


class Daemon:
    """One ``pivoter run`` process: its ports, store, log file and system namespace."""

    def __init__(
        self,
        kubeconfig: Path,
        *,
        namespace: str,
        store_dir: Path,
        log: Path,
        webhook: bool = True,
        extra_args: Sequence[str] = (),
        hooked: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.store_dir = store_dir
        self.log = log
        self.webhook = webhook
        self.extra_args = list(extra_args)
        """More ``pivoter run`` flags (e.g. ``--olmv1=serve``)."""
        self.hooked = hooked
        """Run through :mod:`tests.e2e.hooked` (fault hooks from the environment)."""
        self.env = dict(env or {})
        """More environment variables for every start (e.g. a hook of :mod:`tests.e2e.hooked`)."""
        self.process: subprocess.Popen[bytes] | None = None
        self.metrics_port = self.health_port = self.content_port = self.webhook_port = 0

    @property
    def content_url(self) -> str:
        """Base URL of the content server (``status.contentURL`` starts with it)."""
        return f"http://127.0.0.1:{self.content_port}"

    @property
    def pid(self) -> int:
        """The daemon's process id."""
        if self.process is None:
            raise DaemonError("the daemon is not running")
        return self.process.pid

    def argv(self) -> list[str]:
        """The ``pivoter run`` command line (fresh ports on every start)."""
        self.metrics_port, self.health_port, self.content_port, self.webhook_port = free_ports(4)
        argv = [
            sys.executable,
            "-m",
            "tests.e2e.hooked" if self.hooked else "pivoter.cli.main",
            "run",
            "--kubeconfig",
            str(self.kubeconfig),
            "--namespace",
            self.namespace,
            "--store-dir",
            str(self.store_dir),
            "--metrics-bind-address",
            f"127.0.0.1:{self.metrics_port}",
            "--health-probe-bind-address",
            f"127.0.0.1:{self.health_port}",
            "--content-bind-address",
            f"127.0.0.1:{self.content_port}",
            "--content-url",
            self.content_url,
            "--log-format",
            "text",
        ]
        if self.webhook:
            argv += [
                "--webhook-bind-address",
                f"127.0.0.1:{self.webhook_port}",
                "--webhook-url",
                f"https://127.0.0.1:{self.webhook_port}",
            ]
        return argv + self.extra_args

    def start(self, timeout: float = 60.0, *, env: Mapping[str, str] | None = None) -> None:
        """Start the daemon and wait until it is ready; ``env``: more environment variables for
        this start only (e.g. ``{tests.e2e.hooked.PAUSE_PIVOT_AT: phase}``)."""
        if self.process is not None and self.process.poll() is None:
            raise DaemonError("the daemon is already running")
        self.store_dir.mkdir(parents=True, exist_ok=True)
        environment = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env, **(env or {})}
        if self.hooked:  # python -m tests.e2e.hooked, from any working directory
            path = environment.get("PYTHONPATH")
            environment["PYTHONPATH"] = os.pathsep.join([str(REPO), *([path] if path else [])])
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(
                self.argv(), stdout=sink, stderr=subprocess.STDOUT, env=environment
            )
        deadline = time.monotonic() + timeout
        while not self._ready():
            if self.process.poll() is not None:
                raise DaemonError(
                    f"pivoter run exited with {self.process.returncode}: {self.tail()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise DaemonError(f"pivoter run not ready after {timeout:.0f}s: {self.tail()}")
            time.sleep(0.2)

    def _ready(self) -> bool:
        url = f"http://127.0.0.1:{self.health_port}/readyz"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return int(response.status) == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self, kube: Kube | None = None, timeout: float = 30.0) -> int | None:
        """SIGTERM (then SIGKILL after ``timeout``); with ``kube``, remove the webhook config."""
        code = None
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(10)
            code = self.process.returncode
        if kube is not None and self.webhook:
            resource = kube.resource(WEBHOOK_CONFIGS, "ValidatingWebhookConfiguration")
            with contextlib.suppress(NotFound):
                kube.delete(resource, WEBHOOK_CONFIGURATION)
        return code

    def restart(self, kube: Kube | None = None) -> None:
        """Stop and start again (new ports, same store directory and log)."""
        self.stop(kube)
        self.start()

    def cpu_ticks(self) -> int:
        """utime + stime of the daemon from ``/proc/<pid>/stat``, in clock ticks."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5)

    def tail(self, chars: int = 4000) -> str:
        """The end of the daemon's log."""
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"
