"""Real git servers on loopback for the git source tests: ``git http-backend`` behind a Python
HTTP(S) server with optional basic auth, and a test-only ``sshd`` with key auth."""

from __future__ import annotations

import base64
import http.server
import os
import pwd
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from tests.polling import wait_for
from tests.provisioners.servers import Tls, free_port, serve_http
from tests.tools import tool

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "PATH": os.environ["PATH"],
    "HOME": "/nonexistent",
}


def git(*args: str, cwd: Path | None = None) -> str:
    """Run git for test setup and return its stdout."""
    done = subprocess.run(
        [str(tool("git")), *args], cwd=cwd, env=GIT_ENV, capture_output=True, check=True
    )
    return done.stdout.decode().strip()


@dataclass
class Repo:
    """A bare repository served by the test servers, with known commits."""

    path: Path
    first: str
    second: str


def make_repo(root: Path, name: str) -> Repo:
    """A bare repo ``name.git``: commit 1 (tag v1) and commit 2 (branch main and dev).

    Commit 1 has ``bundle/manifests/cm.yaml`` naming ``first``; commit 2 renames it ``second``
    and adds a root-level ``manifests/`` too.
    """
    work = root / f"{name}-work"
    (work / "bundle" / "manifests").mkdir(parents=True)
    git("init", "--quiet", "--initial-branch=main", cwd=work)
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n"
    (work / "bundle" / "manifests" / "cm.yaml").write_text(cm.format("first"))
    git("add", "-A", cwd=work)
    git("commit", "--quiet", "-m", "first", cwd=work)
    first = git("rev-parse", "HEAD", cwd=work)
    git("tag", "-a", "v1", "-m", "v1", cwd=work)
    (work / "bundle" / "manifests" / "cm.yaml").write_text(cm.format("second"))
    (work / "manifests").mkdir()
    (work / "manifests" / "root.yaml").write_text(cm.format("root"))
    git("add", "-A", cwd=work)
    git("commit", "--quiet", "-m", "second", cwd=work)
    second = git("rev-parse", "HEAD", cwd=work)
    git("branch", "dev", cwd=work)
    bare = root / f"{name}.git"
    git("clone", "--quiet", "--bare", str(work), str(bare))
    return Repo(bare, first, second)


@contextmanager
def serve_git_http(
    project_root: Path, *, credentials: tuple[str, str] | None = None, tls: Tls | None = None
) -> Iterator[str]:
    """Serve the repositories under ``project_root`` with ``git http-backend``; yield base URL."""
    backend = str(tool("git"))
    expected = (
        "Basic " + base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode()
        if credentials
        else None
    )

    class GitHttp(http.server.BaseHTTPRequestHandler):
        def _handle(self) -> None:
            if expected and self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            env = {
                "PATH": os.environ["PATH"],
                "GIT_PROJECT_ROOT": str(project_root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": "/dev/null",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_ADDR": "127.0.0.1",
                "REMOTE_USER": credentials[0] if credentials else "",
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            }
            done = subprocess.run(
                [backend, "http-backend"], input=body, env=env, capture_output=True, check=False
            )
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.decode("latin-1").split("\r\n"):
                key, _, value = line.partition(":")
                if key.lower() == "status":
                    status = int(value.strip().split()[0])
                elif key:
                    headers.append((key, value.strip()))
            self.send_response(status)
            for key, value in headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = _handle
        do_POST = _handle

        def log_message(self, *_: object) -> None:
            pass

    with serve_http(GitHttp, tls) as url:
        yield url


@dataclass
class SshServer:
    """A running test sshd: its port, the client key and the known_hosts line."""

    port: int
    client_key: bytes
    known_hosts: bytes


def _openssh_private(key: ed25519.Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )


def _openssh_public(key: ed25519.Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )


@contextmanager
def run_sshd(directory: Path) -> Iterator[SshServer]:
    """Start sshd on 127.0.0.1 (key auth only, git commands only); stop it on exit."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    host_key = ed25519.Ed25519PrivateKey.generate()
    client_key = ed25519.Ed25519PrivateKey.generate()
    (directory / "host_key").write_bytes(_openssh_private(host_key))
    (directory / "host_key").chmod(0o600)
    # Only git's upload-pack may run, through git-shell, whatever the client asks for.
    (directory / "authorized_keys").write_bytes(
        b'command="git-shell -c \\"$SSH_ORIGINAL_COMMAND\\"",no-port-forwarding,'
        b"no-X11-forwarding,no-agent-forwarding,no-pty " + _openssh_public(client_key) + b"\n"
    )
    port = free_port()
    config = directory / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {directory / 'host_key'}",
                f"PidFile {directory / 'sshd.pid'}",
                f"AuthorizedKeysFile {directory / 'authorized_keys'}",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PubkeyAuthentication yes",
                "UsePAM no",
                "StrictModes no",
                "PermitRootLogin prohibit-password",
                f"AllowUsers {pwd.getpwuid(os.getuid()).pw_name}",
                "LogLevel ERROR",
                "",
            ]
        )
    )
    # sshd refuses to start without its privilege separation directory.
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = open(directory / "sshd.log", "wb")  # noqa: SIM115 - closed in finally
    process = subprocess.Popen(
        [str(tool("sshd")), "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT
    )

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited: {(directory / 'sshd.log').read_text()}")
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_for(ready, timeout=30.0, interval=0.05, what="sshd")
        known = f"[127.0.0.1]:{port} ".encode() + _openssh_public(host_key) + b"\n"
        yield SshServer(port, _openssh_private(client_key), known)
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
