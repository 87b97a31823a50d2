"""Real servers on loopback for the provisioner tests: a test CA, the distribution registry
(anonymous, htpasswd, token auth, TLS) and small Python HTTP servers.

Each server runs on 127.0.0.1 on a free port and is stopped by the fixture that started it.
"""

from __future__ import annotations

import base64
import datetime
import http.server
import ipaddress
import json
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from tests.polling import wait_for
from tests.ports import free_port
from tests.tools import tool


@dataclass
class Tls:
    """A test CA and a server certificate for 127.0.0.1/localhost signed by it."""

    ca_pem: bytes
    cert_file: Path
    key_file: Path
    ca_file: Path
    signing_key: rsa.RSAPrivateKey
    signing_cert: x509.Certificate


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_tls(directory: Path) -> Tls:
    """Generate a CA and a server certificate (and a token signing cert) under ``directory``."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("pivoter test CA"))
        .issuer_name(_name("pivoter test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(common: str, server: bool) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            ).add_extension(
                x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
        return key, builder.sign(ca_key, hashes.SHA256())

    server_key, server_cert = leaf("127.0.0.1", server=True)
    signing_key, signing_cert = leaf("pivoter test token signer", server=False)
    directory.mkdir(parents=True, exist_ok=True)
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    (directory / "ca.pem").write_bytes(ca_pem)
    (directory / "server.pem").write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    (directory / "server.key").write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return Tls(
        ca_pem=ca_pem,
        cert_file=directory / "server.pem",
        key_file=directory / "server.key",
        ca_file=directory / "ca.pem",
        signing_key=signing_key,
        signing_cert=signing_cert,
    )


@dataclass
class Registry:
    """A running distribution registry."""

    host: str
    """``127.0.0.1:PORT``, the registry part of image references."""
    scheme: str
    username: str | None = None
    password: str | None = None
    token_realm: str | None = None

    @property
    def base(self) -> str:
        """The URL prefix of the registry API."""
        return f"{self.scheme}://{self.host}"

    def pull_secret(self, username: str | None = None, password: str | None = None) -> bytes:
        """A ``.dockerconfigjson`` with this registry's (or the given) credentials."""
        auth = base64.b64encode(
            f"{username or self.username}:{password or self.password}".encode()
        ).decode()
        return json.dumps({"auths": {self.host: {"auth": auth}}}).encode()


@contextmanager
def run_registry(
    directory: Path,
    *,
    htpasswd: tuple[str, str] | None = None,
    tls: Tls | None = None,
    token: tuple[str, Path] | None = None,
    address: str = "127.0.0.1",
) -> Iterator[Registry]:
    """Start ``registry serve`` with the given auth/TLS configuration, listening on ``address``
    (loopback unless a test needs a registry that is not); stop it on exit."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    lines = [
        "version: 0.1",
        "log:",
        "  level: error",
        "  accesslog:",
        "    disabled: true",
        "storage:",
        "  filesystem:",
        f"    rootdirectory: {directory / 'data'}",
        "  delete:",
        "    enabled: true",
        "http:",
        f"  addr: {address}:{port}",
        "  debug:",
        "    addr: ''",
    ]
    if tls is not None:
        lines += ["  tls:", f"    certificate: {tls.cert_file}", f"    key: {tls.key_file}"]
    username = password = realm = None
    if htpasswd is not None:
        username, password = htpasswd
        passwd_file = directory / "htpasswd"
        subprocess.run(
            [str(tool("htpasswd")), "-Bbc", str(passwd_file), username, password],
            check=True,
            capture_output=True,
        )
        lines += ["auth:", "  htpasswd:", "    realm: pivoter-test", f"    path: {passwd_file}"]
    if token is not None:
        realm, bundle = token
        lines += [
            "auth:",
            "  token:",
            f"    realm: {realm}",
            "    service: pivoter-test-registry",
            "    issuer: pivoter-test-issuer",
            f"    rootcertbundle: {bundle}",
        ]
    config = directory / "config.yml"
    config.write_text("\n".join(lines) + "\n")
    log = open(directory / "registry.log", "wb")  # noqa: SIM115 - closed in finally
    process = subprocess.Popen(
        [str(tool("registry")), "serve", str(config)], stdout=log, stderr=subprocess.STDOUT
    )
    scheme = "https" if tls else "http"
    registry = Registry(f"{address}:{port}", scheme, username, password, realm)

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(
                f"registry exited: {(directory / 'registry.log').read_text()[-2000:]}"
            )
        with socket.socket() as probe:
            return probe.connect_ex((address, port)) == 0

    try:
        wait_for(ready, timeout=30.0, interval=0.05, what="the registry")
        yield registry
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign_token(tls: Tls, scope: str | None, subject: str) -> str:
    """A registry JWT (RS256, x5c chain to the test CA) granting ``scope``."""
    access = []
    if scope:
        kind, _, rest = scope.partition(":")
        name, _, actions = rest.rpartition(":")
        access.append({"type": kind, "name": name, "actions": actions.split(",")})
    now = int(time.time())
    header = {
        "alg": "RS256",
        "typ": "JWT",
        "x5c": [
            base64.b64encode(tls.signing_cert.public_bytes(serialization.Encoding.DER)).decode()
        ],
    }
    claims = {
        "iss": "pivoter-test-issuer",
        "sub": subject,
        "aud": "pivoter-test-registry",
        "exp": now + 600,
        "nbf": now - 10,
        "iat": now,
        "jti": _b64url(str(time.monotonic_ns()).encode()),
        "access": access,
    }
    signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
    signature = tls.signing_key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64url(signature)}"


@contextmanager
def serve_http(
    handler: type[http.server.BaseHTTPRequestHandler], tls: Tls | None = None
) -> Iterator[str]:
    """Run ``handler`` on a threaded HTTP(S) server on 127.0.0.1; yield its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    scheme = "http"
    if tls is not None:
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls.cert_file, tls.key_file)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def http_ok(url: str) -> bool:
    """Whether ``url`` answers at all (any HTTP status)."""
    try:
        urllib.request.urlopen(url, timeout=2)
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True
