"""Starting, probing and stopping one control-plane process (etcd, kube-apiserver, ...).

Used by ``localcluster.cluster``. Every wait has a deadline; when a process exits early or is
not ready in time, the error carries the tail of its log so that the cause is visible at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

_PR_SET_PDEATHSIG = 1
LOG_TAIL_LINES = 40


class ClusterError(RuntimeError):
    """The local control plane could not be started, reached or stopped."""


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """Return the last ``lines`` lines of a log file (empty when there is none)."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def check_port_free(port: int, what: str) -> None:
    """Fail with a clear message when ``port`` on 127.0.0.1 is already taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise ClusterError(
                f"port {port} on 127.0.0.1 (for {what}) is in use: {exc.strerror}; "
                "stop what listens there or choose another port"
            ) from exc


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: ask the kernel to SIGTERM the child when the
    # process that started it dies, so a SIGKILLed pytest leaves no control plane behind.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (and is not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    # The state letter follows the parenthesised command name.
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pid_cmdline(pid: int) -> list[str]:
    """The command line of a running process ([] when it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def terminate_pid(pid: int, timeout: float = 15.0) -> None:
    """SIGTERM a process, then SIGKILL it if it has not exited within ``timeout`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


@dataclass
class Component:
    """One control-plane process: how to start it, where it logs, and its running handle."""

    name: str
    argv: Sequence[str]
    log: Path
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    pid: int | None = None

    def start(self, *, die_with_parent: bool) -> None:
        """Start the process with output appended to its log file."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            out.write(f"\n=== start {time.strftime('%H:%M:%S')}: {' '.join(self.argv)}\n".encode())
            out.flush()
            self.popen = subprocess.Popen(
                list(self.argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                # Own session: a Ctrl-C in the terminal reaches the owner, which stops the
                # components in order, instead of killing them all at once mid-write.
                start_new_session=True,
                preexec_fn=_die_with_parent if die_with_parent else None,  # noqa: PLW1509
            )
        self.pid = self.popen.pid

    def exited(self) -> int | None:
        """The exit code if the process has ended, else None."""
        if self.popen is not None:
            return self.popen.poll()
        if self.pid is not None and not pid_alive(self.pid):
            return -1
        return None

    def failure(self, what: str) -> ClusterError:
        """An error about this component that includes the tail of its log."""
        return ClusterError(f"{self.name} {what}; last lines of {self.log}:\n{log_tail(self.log)}")

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``ready`` until it is true; fail if the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        while True:
            code = self.exited()
            if code is not None:
                raise self.failure(f"exited with code {code} before it was {what}")
            with contextlib.suppress(OSError, ValueError):
                if ready():
                    return
            if time.monotonic() > deadline:
                raise self.failure(f"was not {what} after {timeout:.0f}s")
            time.sleep(0.2)

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the process (SIGTERM, then SIGKILL after ``timeout``) and reap it."""
        if self.pid is not None:
            terminate_pid(self.pid, timeout)
        if self.popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=5)
        self.popen = None
        self.pid = None
