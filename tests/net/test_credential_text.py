"""Credentials as text: a token, username or password that cannot go into a request is refused
where it enters, in one line naming the file or Secret and key, never showing the credential.

Before the guard, a token file holding a newline ended ``catalog render`` in a traceback (exit 70)
whose last line, http.client's ``ValueError: Invalid header value b'Bearer ...'``, printed the
token. Each entry is attacked here with a credential of each shape (line feed, carriage return,
NUL, another control character, non-ASCII, a space inside a token, a colon in a username), and
the refusal is checked for where it points and for the absence of the secret.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from pivoter.catalogs.errors import InvalidCatalog
from pivoter.catalogs.sources import SourceSettings, build_source
from pivoter.cli.exitcodes import ExitCode
from pivoter.controllers.sourcespec import source_spec
from pivoter.kube import Kube
from pivoter.registries import PullSecretRef, read_auth_file
from provisioners.errors import InvalidSourceError, ProvisionerError, SourceError
from provisioners.httpclient import HttpClient
from provisioners.registries.auth import AuthFile
from provisioners.registries.reference import parse_reference
from provisioners.sources import FetchOptions, GitAuth, GitRef, GitSpec, HttpSpec, ImageSpec, fetch
from provisioners.sources.git import GitSource
from resolver.catalog.sources import CatalogdSource, CatalogSourceError
from resolver.net import (
    Budget,
    InvalidCredential,
    UnsendableText,
    basic_credential,
    bearer_token,
    open_connection,
    read_token_file,
)
from resolver.net.credentials import MAX_CREDENTIAL_CHARS, header_problem, url_problem
from tests.clirun import pivoter
from tests.net.hostile import Step, hostile_server

SECRET = "s3cretValue"
"""Every hostile credential below holds this; no error may show it."""
OPTIONS = FetchOptions(timeout_seconds=2, deadline_seconds=5)

BAD_TOKENS = {
    "line feed inside": f"{SECRET}\nX-Injected: 1",
    "carriage return": f"{SECRET}\rX",
    "NUL": f"{SECRET}\x00",
    "escape": f"\x1b{SECRET}",
    "DEL": f"{SECRET}\x7f",
    "non-Latin-1": f"{SECRET}\u2603",
    "Latin-1 but not ASCII": f"{SECRET}\xe9",
    "space inside": f"{SECRET} more",
}
BAD_BASIC = {
    "trailing line feed": f"{SECRET}\n",
    "carriage return": f"{SECRET}\rX",
    "NUL": f"{SECRET}\x00",
    "C1 control": f"{SECRET}\x85",
    "bell": f"\x07{SECRET}",
}


def _clean(message: str) -> None:
    """One line, and no part of the secret."""
    assert "\n" not in message.strip(), message
    assert SECRET not in message, message
    assert "Traceback" not in message


# -- the rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", sorted(BAD_TOKENS))
def test_a_token_that_cannot_go_into_a_header_is_refused(shape: str) -> None:
    with pytest.raises(InvalidCredential) as err:
        bearer_token(BAD_TOKENS[shape], where="token file /t", trim=True)
    assert str(err.value).startswith("token file /t: the token holds ")
    _clean(str(err.value))


@pytest.mark.parametrize("shape", sorted(BAD_BASIC))
def test_a_password_with_a_control_character_is_refused(shape: str) -> None:
    with pytest.raises(InvalidCredential) as err:
        basic_credential(BAD_BASIC[shape], where="Secret 's' key 'password'", part="password")
    assert str(err.value).startswith("Secret 's' key 'password': the password holds ")
    _clean(str(err.value))


def test_what_is_accepted_and_how_it_is_told() -> None:
    # Token files: surrounding whitespace trimmed (echo's newline), as client-go does.
    assert bearer_token(f"  {SECRET}\r\n", where="w", trim=True) == SECRET
    assert bearer_token(b"eyJ.a-b_c~d+e/f==", where="w") == "eyJ.a-b_c~d+e/f=="
    with pytest.raises(InvalidCredential, match="at its end"):
        bearer_token(f"{SECRET}\n", where="w")  # without trim (a pull secret's token): refused
    with pytest.raises(InvalidCredential, match="is empty"):
        bearer_token(" \n\t", where="w", trim=True)
    with pytest.raises(InvalidCredential, match="is not UTF-8"):
        bearer_token(b"\xff\xfe", where="w")
    with pytest.raises(InvalidCredential, match="longer than"):
        bearer_token("a" * (MAX_CREDENTIAL_CHARS + 1), where="w")
    with pytest.raises(InvalidCredential, match="not valid Unicode"):
        basic_credential("pass\ud800", where="w", part="password")
    # Basic auth travels base64-encoded: any Unicode text but control characters; exact.
    assert basic_credential("pässwörd ☃ ", where="w", part="password") == "pässwörd ☃ "
    with pytest.raises(InvalidCredential, match="written with echo"):
        basic_credential(f"{SECRET}\n", where="w", part="password")
    with pytest.raises(InvalidCredential, match="colon"):
        basic_credential("user:name", where="w", part="username")
    assert basic_credential("pass:word", where="w", part="password") == "pass:word"
    # The general rules under every request.
    assert header_problem("Bearer abc") is None
    assert header_problem("caf\xe9") is None  # Latin-1 text is a legal field value
    assert header_problem("a\r\nb") == "holds a carriage return (CR) inside it"
    assert header_problem("\u2603") == "holds a character outside Latin-1 at its end"
    assert url_problem("/v2/a/manifests/v1?x=%0A") is None
    assert url_problem("/a b") == "holds a space inside it"


# -- the entries --------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["line feed inside", "carriage return", "non-Latin-1"])
def test_catalog_render_refuses_a_token_file_in_one_line(shape: str, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(BAD_TOKENS[shape] + "\n", encoding="utf-8")
    with hostile_server([("send", b"HTTP/1.1 500 No\r\nContent-Length: 0\r\n\r\n")]) as server:
        result = pivoter(
            "catalog", "render", f"{server.url}/catalogs/x", "--token-file", str(token)
        )
    assert result.returncode == ExitCode.INVALID, result.stderr
    assert result.stderr.startswith(f"pivoter: error: token file {token}: the token holds ")
    _clean(result.stderr)
    assert server.heads == []  # refused before anything was sent


def test_catalog_render_sends_a_token_file_written_by_echo(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(f"{SECRET}\n")
    empty: list[Step] = [
        ("send", b"HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nContent-Length: 0\r\n\r\n")
    ]
    with hostile_server(empty) as server:
        result = pivoter(
            "catalog", "render", f"{server.url}/catalogs/x", "--token-file", str(token)
        )
    assert result.returncode == ExitCode.OK, result.stderr
    assert f"\r\nAuthorization: Bearer {SECRET}\r\n".encode() in server.heads[0] + b"\r\n"


def test_token_files_are_read_without_blocking_and_bounded(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_token_file(str(fifo))
    big = tmp_path / "big"
    big.write_bytes(b" " * (2 << 20))
    with pytest.raises(OSError, match="larger than"):
        read_token_file(str(big))


def test_catalogd_client_refuses_a_bad_token_itself() -> None:
    with pytest.raises(CatalogSourceError) as err:
        CatalogdSource("https://example.invalid/catalogs/x", token=BAD_TOKENS["line feed inside"])
    assert "the bearer token: the token holds a line feed (LF) inside it" in str(err.value)
    _clean(str(err.value))


def _secret(**values: str) -> dict[str, Any]:
    data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    return {"kind": "Secret", "metadata": {"name": "creds"}, "data": data}


def _reader(secret: Mapping[str, Any]) -> Any:
    def read(kind: str, name: str) -> Mapping[str, Any] | None:
        return secret if kind == "Secret" and name == "creds" else None

    return read


@pytest.mark.parametrize("shape", ["line feed inside", "carriage return", "NUL", "non-Latin-1"])
def test_a_catalogs_token_secret_is_checked_where_it_is_read(shape: str, tmp_path: Path) -> None:
    spec = {
        "type": "http",
        "http": {"url": "https://c.example/x", "tokenSecret": {"name": "creds"}},
    }
    read = _reader(_secret(token=BAD_TOKENS[shape]))
    with pytest.raises(InvalidCatalog) as err:
        build_source("c", spec, read, SourceSettings(workdir=tmp_path))
    assert str(err.value).startswith(
        "spec.source.http.tokenSecret: Secret 'creds' key 'token': the token holds "
    )
    _clean(str(err.value))
    # A trailing newline (a Secret made with echo | base64) is trimmed, as from a token file.
    built = build_source(
        "c", spec, _reader(_secret(token=f"{SECRET}\n")), SourceSettings(workdir=tmp_path)
    )
    assert isinstance(built.source, CatalogdSource)
    assert built.source.token == SECRET


def _dockerconfig(registry: str, **entry: Any) -> bytes:
    return json.dumps({"auths": {registry: entry}}).encode()


def _auth(username: str, password: str) -> str:
    return base64.b64encode(f"{username}:{password}".encode()).decode()


PULL_SECRETS = {
    "auth password with a line feed": (
        {"auth": _auth("u", f"{SECRET}\n")},
        "auth: the password holds a line feed (LF) at its end",
    ),
    "auth username with a NUL": (
        {"auth": _auth(f"u\x00{SECRET}", "p")},
        "auth: the username holds a NUL character inside it",
    ),
    "password with a carriage return": (
        {"username": "u", "password": f"{SECRET}\r\n"},
        "password: the password holds a carriage return (CR) inside it",
    ),
    "username with a colon": (
        {"username": f"u:{SECRET}", "password": "p"},
        "username: the username holds a colon",
    ),
    "password that is not a string": (
        {"username": "u", "password": 7},
        "password must be a string",
    ),
    "identitytoken with a line feed": (
        {"identitytoken": f"{SECRET}\nX: y"},
        "identitytoken: the token holds a line feed (LF) inside it",
    ),
    "registrytoken outside Latin-1": (
        {"registrytoken": f"{SECRET}\u2603"},
        "registrytoken: the token holds a character outside Latin-1",
    ),
}


@pytest.mark.parametrize("shape", sorted(PULL_SECRETS))
def test_every_field_of_a_pull_secret_entry_is_checked(shape: str) -> None:
    entry, reason = PULL_SECRETS[shape]
    config = _dockerconfig("other.example", **entry)
    where = "Secret 'pull' key '.dockerconfigjson'"
    # Every entry is refused, not only the one a pull would use (as kubelet decodes them all).
    with pytest.raises(InvalidSourceError) as err:
        AuthFile.parse(config, where)
    assert f"{where} auths entry 'other.example' {reason}" in str(err.value)
    _clean(str(err.value))


def test_pull_secrets_are_checked_where_bundles_and_catalogs_read_them(tmp_path: Path) -> None:
    config = _dockerconfig("quay.io", auth=_auth("u", f"{SECRET}\n"))
    secret = {"kind": "Secret", "data": {".dockerconfigjson": base64.b64encode(config).decode()}}
    read = _reader(secret)

    class OneSecret:
        """What the Bundle controller reads the Secret through (pure: one object)."""

        def get(self, resource: object, name: str, namespace: str | None = None) -> object:
            return secret

    ref = PullSecretRef("system", "creds", required=True, field="spec.source.image.pullSecret")
    with pytest.raises(InvalidSourceError) as err:
        read_auth_file(cast(Kube, OneSecret()), ref)
    assert str(err.value).startswith(
        "spec.source.image.pullSecret: Secret system/creds key '.dockerconfigjson' auths entry "
        "'quay.io' auth: the password holds a line feed (LF) at its end"
    )
    _clean(str(err.value))
    image = {"type": "image", "image": {"ref": "quay.io/a/b:1", "pullSecret": "creds"}}
    with pytest.raises(InvalidCatalog) as caught:
        build_source("c", image, read, SourceSettings(workdir=tmp_path))
    assert "spec.source.image.pullSecret: Secret 'creds' key '.dockerconfigjson'" in str(
        caught.value
    )
    _clean(str(caught.value))


@pytest.mark.parametrize("kind", ["http", "git"])
@pytest.mark.parametrize("key", ["username", "password"])
def test_basic_auth_secrets_of_http_and_git_sources_are_checked(kind: str, key: str) -> None:
    values = {"username": "u", "password": "p", key: f"{SECRET}\n"}
    if kind == "http":
        source = {"type": "http", "http": {"url": "https://h/b.tgz", "auth": {}}}
    else:
        git = {"repository": "https://h/r.git", "ref": {"branch": "main"}, "auth": {}}
        source = {"type": "git", "git": git}
    source[kind]["auth"] = {"secret": {"name": "creds"}}
    with pytest.raises(InvalidSourceError) as err:
        source_spec(source, _reader(_secret(**values)))
    assert str(err.value).startswith(
        f"spec.source.{kind}.auth.secret: Secret 'creds' key '{key}': the {key} holds a line feed"
    )
    _clean(str(err.value))


def test_a_secret_value_that_is_not_utf8_is_refused_not_a_traceback() -> None:
    data = {"username": "dQ==", "password": base64.b64encode(b"\xff\xfe").decode()}
    secret = {"kind": "Secret", "data": data}
    source = {"type": "http", "http": {"url": "https://h/b", "auth": {"secret": {"name": "creds"}}}}
    with pytest.raises(InvalidSourceError, match="key 'password' is not UTF-8 text"):
        source_spec(source, _reader(secret))


def test_sources_given_bad_credentials_directly_refuse_them(tmp_path: Path) -> None:
    """The provisioners check again for callers other than the cluster side: nothing is
    sent, and git is never started (a NUL in its environment would crash the exec)."""
    with pytest.raises(InvalidSourceError) as err:
        fetch(
            HttpSpec("https://h.invalid/b.tgz", username="u", password=f"{SECRET}\n"),
            tmp_path,
            OPTIONS,
        )
    _clean(str(err.value))
    git = GitSource(git="/nonexistent/git")  # nothing may run at all
    for spec in (
        GitSpec("https://h/r.git", GitRef(branch="main"), auth=GitAuth("u", f"{SECRET}\x00")),
        GitSpec(f"https://u:{SECRET}@h/r\x00.git", GitRef(branch="main")),
        GitSpec("https://h/r.git", GitRef(branch="ma\x00in")),
        GitSpec("https://h/r.git", GitRef(branch="main"), directory="a\rb"),
    ):
        with pytest.raises(InvalidSourceError) as err:
            git.fetch(spec, tmp_path, OPTIONS)
        _clean(str(err.value))


def test_an_image_reference_with_a_newline_before_a_slash_is_refused() -> None:
    # "$" matched before a final newline: the host went into every Host header.
    for text in ("host.io\n/app:v1", "host.io/a\n/b", "host.io/a/b:v1\n@sha256:" + "a" * 64):
        with pytest.raises(InvalidSourceError, match="invalid image reference"):
            parse_reference(text)


# -- what a registry sends back ----------------------------------------------------------------


def _registry(token_answer: bytes, challenge: str | None = None) -> Any:
    """A registry on 127.0.0.1 that asks for a token, and a token service that answers
    ``token_answer`` (JSON)."""

    def script(head: bytes) -> list[Step]:
        if b"GET /token" in head:
            answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            answer += f"Content-Length: {len(token_answer)}\r\n\r\n".encode() + token_answer
            return [("send", answer)]
        port = head.split(b"Host: 127.0.0.1:", 1)[1].split(b"\r\n", 1)[0].decode()
        realm = challenge or f'Bearer realm="http://127.0.0.1:{port}/token",service="r"'
        return [
            (
                "send",
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: "
                + realm.encode("latin-1")
                + b"\r\nContent-Length: 0\r\n\r\n",
            )
        ]

    return hostile_server(script)


@pytest.mark.parametrize(
    "token", [f"{SECRET}\r\nX-Injected: 1", f"{SECRET}\x00", f"{SECRET}\u2603", f"a {SECRET}"]
)
def test_a_token_service_answer_that_cannot_be_sent_back_is_refused(
    token: str, tmp_path: Path
) -> None:
    with _registry(json.dumps({"token": token}).encode()) as server:
        spec = ImageSpec(f"127.0.0.1:{server.port}/team/b:v1")
        with pytest.raises(SourceError) as err:
            fetch(spec, tmp_path, OPTIONS)
    assert f"the token service of 127.0.0.1:{server.port}: the token holds" in str(err.value)
    _clean(str(err.value))
    assert len(server.heads) == 2  # the challenge and the token request; the token never went out
    assert not any(b"X-Injected" in head for head in server.heads)


@pytest.mark.parametrize(
    ("realm", "reason"),
    [
        ("http://127.0.0.1:1/tok\u00e9n", "realm cannot be requested: it holds a non-ASCII"),
        ("http://127.0.0.1:1/a b", "realm cannot be requested: it holds a space"),
        ("file:///etc/passwd", "realm is not an http(s) URL"),
    ],
)
def test_a_hostile_challenge_is_refused_in_one_line(
    realm: str, reason: str, tmp_path: Path
) -> None:
    challenge = f'Bearer realm="{realm}",service="r"'
    with _registry(b"{}", challenge) as server:
        spec = ImageSpec(f"127.0.0.1:{server.port}/team/b:v1")
        with pytest.raises(ProvisionerError) as err:
            fetch(spec, tmp_path, OPTIONS)
    assert reason in str(err.value), err.value
    assert len(server.heads) == 1


def test_a_challenge_service_with_a_control_character_is_refused(tmp_path: Path) -> None:
    challenge = 'Bearer realm="http://127.0.0.1:1/t",service="r\x0bx"'
    with (
        _registry(b"{}", challenge) as server,
        pytest.raises(SourceError, match="service holds a control character"),
    ):
        fetch(ImageSpec(f"127.0.0.1:{server.port}/team/b:v1"), tmp_path, OPTIONS)


def test_a_redirect_to_a_url_that_cannot_be_requested_is_one_line() -> None:
    location = "/caf\u00e9".encode("latin-1")  # http.client decodes headers as Latin-1
    redirect = b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\nContent-Length: 0\r\n\r\n"
    with hostile_server([("send", redirect)]) as server, pytest.raises(SourceError) as err:
        HttpClient(timeout=2, deadline=5).request("GET", f"{server.url}/x")
    assert "redirected to a URL that cannot be requested: it holds a non-ASCII" in str(err.value)


def test_the_http_layer_refuses_what_no_entry_caught_without_showing_it() -> None:
    """The backstop under every request: http.client would raise ValueError with the value in
    its message, or send a NUL; here the header is named, the value never."""
    connection = open_connection("http", "127.0.0.1", 9, Budget(5, stall=2))
    assert isinstance(connection, http.client.HTTPConnection)
    connection.putrequest("GET", "/x")
    for value in (f"Bearer {SECRET}\n", f"Bearer {SECRET}\x00", f"Bearer {SECRET}\u2603"):
        with pytest.raises(UnsendableText) as err:
            connection.putheader("Authorization", value)
        assert "refusing to send the Authorization header to 127.0.0.1:9: its value holds" in str(
            err.value
        )
        _clean(str(err.value))
    fresh = open_connection("http", "127.0.0.1", 9, Budget(5, stall=2))
    with pytest.raises(UnsendableText, match=r"refusing to request a URL from 127\.0\.0\.1:9"):
        fresh.putrequest("GET", f"/{SECRET}\u00e9")


def test_a_url_that_cannot_be_requested_is_one_line_in_every_client(tmp_path: Path) -> None:
    with pytest.raises(CatalogSourceError) as err:
        CatalogdSource("http://127.0.0.1:9/caf\u00e9/x").fetch()
    assert "refusing to request a URL from 127.0.0.1:9: it holds a non-ASCII" in str(err.value)
    with pytest.raises(InvalidSourceError, match="the URL to fetch cannot be requested"):
        fetch(HttpSpec("http://127.0.0.1:9/b\u00e9.tgz"), tmp_path, OPTIONS)
    # "$" matched before a final newline: a gRPC address with one passed the Catalog's check.
    grpc = {"type": "grpc", "grpc": {"address": "catalog.example:50051\n"}}
    with pytest.raises(InvalidCatalog, match="is not host:port"):
        build_source("c", grpc, _reader({}), SourceSettings(workdir=tmp_path))
