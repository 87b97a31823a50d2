"""Credentials as text, and when a credential may be sent: refused where they enter when they
cannot go into a request, never over plain http to another machine unless asked.

**Text.** A token or password is text that ends up in an HTTP header (``Authorization``), a git
askpass answer or a process environment. A line break there is at best a confusing failure
(http.client raises ``ValueError: Invalid header value`` with the value in the message, so the
credential lands in a traceback), at worst a header of the sender's choosing; a NUL crashes the
``exec`` of git. Every place a credential enters pivoter (``--token-file``, the Secrets of Catalogs
and Bundles, pull secrets' ``auths`` entries, a registry token service's answer) runs it through
:func:`bearer_token` or :func:`basic_credential` here, so the rules and the wording are the same
everywhere, and the error names the file or Secret and key, never the value:

- bearer tokens (RFC 6750 ``b64token`` is a subset) are visible ASCII, ``!`` to ``~``, nothing
  else: no space, tab, control character or non-ASCII character;
- basic-auth usernames and passwords are UTF-8 text without control characters (C0, DEL, C1);
  they travel base64-encoded, so any other Unicode character is fine; a username has no ``:``
  (RFC 7617: the first colon ends it);
- everything is at most :data:`MAX_CREDENTIAL_CHARS` characters.

Token files (and a Catalog's ``tokenSecret``) have their surrounding whitespace trimmed first, as
client-go does with a token file, so the newline ``echo token > file`` writes is harmless;
whitespace inside a token is refused. Values of basic-auth Secrets and pull secrets are taken
exactly as stored: a trailing newline there is refused with a hint instead of being guessed away.
:func:`header_problem` and :func:`url_problem` are the general rules behind these, used by
:mod:`resolver.net.http` as the backstop under every request it sends.

**Transport.** A bearer token or a password sent over plain http can be read and replayed by
anyone on the path. Over https it is protected; over plain http it is only safe when the peer is
this machine (loopback). Everything else needs an explicit opt-in, whose name the error gives
(``--insecure-send-token``, ``insecureSendToken``...). :func:`check_credential_transport` is the
check every client that attaches a credential calls before sending it, for the first request and
for every redirect; :func:`same_origin` is what decides whether a redirect may carry it at all.
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
from typing import Literal
from urllib.parse import urlsplit

_ENCRYPTED = frozenset({"https", "grpcs", "ssh"})

MAX_CREDENTIAL_CHARS = 64 * 1024
"""Longest token, username or password accepted (service-account and OIDC tokens are a few KiB;
servers refuse request headers far shorter than this)."""
MAX_TOKEN_FILE_BYTES = 1 << 20
"""Largest token file read (the token and the whitespace around it)."""

_NOT_TOKEN = re.compile(r"[^\x21-\x7e]")
"""A character a bearer token may not hold: anything but visible ASCII."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""A control character (C0, DEL, C1): what no credential may hold."""
_NOT_FIELD_TEXT = re.compile(r"[^\t\x20-\x7e\xa0-\xff]")
"""A character an HTTP field value may not hold (RFC 9110 field-vchar, SP and HTAB; Latin-1 is
what http.client encodes with; C1 controls refused as the control characters they are)."""
_NOT_URL_TEXT = re.compile(r"[^\x21-\x7e]")
"""A character the target of a request may not hold unencoded (what http.client refuses, and
non-ASCII, which it cannot encode)."""
_NAMED = {
    "\n": "a line feed (LF)",
    "\r": "a carriage return (CR)",
    "\x00": "a NUL character",
    "\t": "a tab",
    " ": "a space",
}


class InsecureCredentials(ValueError):
    """A credential would travel unencrypted to another machine; the message names the opt-in."""


class UnsendableText(ValueError):
    """Text that cannot go into a request as it stands (a header value or URL holding a line
    break, a control character, a character its encoding cannot hold). The message names where
    the text came from and what is wrong with it, never the text itself."""


class InvalidCredential(UnsendableText):
    """A token, username or password that cannot be used as it stands; the message names the
    file or Secret and key it came from, never the credential."""


def _character(text: str, index: int) -> str:
    """What the character at ``index`` of ``text`` is and where, without showing the text (the
    code point of a control character is shown; of any other character, only its class)."""
    char = text[index]
    code = ord(char)
    if char in _NAMED:
        what = _NAMED[char]
    elif code < 0x20 or 0x7F <= code <= 0x9F:
        what = f"a control character (U+{code:04X})"
    elif code > 0xFF:
        what = "a character outside Latin-1"
    else:
        what = "a non-ASCII character"
    if index == len(text) - 1:
        return f"{what} at its end"
    return f"{what} at its start" if index == 0 else f"{what} inside it"


def header_problem(value: str) -> str | None:
    """Why ``value`` cannot be the value of an HTTP header field (None when it can)."""
    bad = _NOT_FIELD_TEXT.search(value)
    if bad is not None:
        return f"holds {_character(value, bad.start())}"
    if value != value.strip(" \t"):
        return "starts or ends with whitespace"
    return None


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be the target of a request as it stands (None when it can): only
    visible ASCII may appear, anything else must be percent-encoded."""
    bad = _NOT_URL_TEXT.search(url)
    return None if bad is None else f"holds {_character(url, bad.start())}"


def _text(raw: bytes | str, where: str, *, trim: bool = False) -> str:
    """``raw`` as text (bytes must be UTF-8), surrounding whitespace dropped if ``trim``; the
    length is capped."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidCredential(f"{where} is not UTF-8 text") from None
    elif not raw.isascii():
        try:
            raw.encode("utf-8")  # a lone surrogate cannot be encoded, so never sent
        except UnicodeEncodeError:
            raise InvalidCredential(f"{where} is not valid Unicode text") from None
    if trim:
        raw = raw.strip()
    if len(raw) > MAX_CREDENTIAL_CHARS:
        raise InvalidCredential(f"{where} is longer than {MAX_CREDENTIAL_CHARS} characters")
    return raw


def _trailing_newline_hint(text: str) -> str:
    if text.endswith("\n"):
        return " (a value written with echo: store it without the trailing newline)"
    return ""


def bearer_token(raw: bytes | str, *, where: str, trim: bool = False) -> str:
    """The bearer token in ``raw``, or :class:`InvalidCredential` naming ``where``.

    ``trim`` drops surrounding whitespace first (token files, as client-go reads them). The
    token must then be non-empty visible ASCII.
    """
    text = _text(raw, where, trim=trim)
    if not text:
        raise InvalidCredential(f"{where} is empty: no token")
    bad = _NOT_TOKEN.search(text)
    if bad is not None:
        raise InvalidCredential(
            f"{where}: the token holds {_character(text, bad.start())}, which a token cannot "
            f"hold (visible ASCII only){_trailing_newline_hint(text)}"
        )
    return text


def basic_credential(raw: bytes | str, *, where: str, part: Literal["username", "password"]) -> str:
    """The basic-auth ``part`` in ``raw``, or :class:`InvalidCredential` naming ``where``.

    Taken exactly (no trimming); control characters are refused, and a colon in a username.
    """
    text = _text(raw, where)
    bad = _CONTROL.search(text)
    if bad is not None:
        raise InvalidCredential(
            f"{where}: the {part} holds {_character(text, bad.start())}, which a {part} cannot "
            f"hold{_trailing_newline_hint(text)}"
        )
    if part == "username" and ":" in text:
        raise InvalidCredential(
            f"{where}: the username holds a colon, which ends a basic-auth username"
        )
    return text


def read_token_file(path: str) -> str:
    """The bearer token in the file ``path``, surrounding whitespace trimmed.

    The file must be a regular file (opened without blocking, so a FIFO swapped in cannot hang
    the read) of at most :data:`MAX_TOKEN_FILE_BYTES`. Raises OSError when it cannot be read as
    such a file, :class:`InvalidCredential` (naming the file, never the token) when what it
    holds is no usable token.
    """
    where = f"token file {path}"
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{where} is not a regular file")
        data = f.read(MAX_TOKEN_FILE_BYTES + 1)
    if len(data) > MAX_TOKEN_FILE_BYTES:
        raise OSError(f"{where} is larger than {MAX_TOKEN_FILE_BYTES // 1024} KiB")
    return bearer_token(data, where=where, trim=True)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this machine.

    ``localhost`` and names under ``.localhost`` (RFC 6761), ``127.0.0.0/8``, ``::1`` and
    IPv4-mapped loopback addresses are; every other name is not, even one that resolves to a
    loopback address today (the decision must not depend on DNS).
    """
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def check_credential_transport(url: str, *, allowed: bool, flag: str | None, what: str) -> None:
    """Raise :class:`InsecureCredentials` if ``what`` must not be sent to ``url``.

    Allowed: encrypted schemes (https, grpcs, ssh), loopback hosts, or ``allowed`` (the user's
    explicit opt-in, named ``flag`` in the error; None when there is no opt-in).
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in _ENCRYPTED or allowed:
        return
    host = parts.hostname or ""
    if is_loopback(host):
        return
    remedy = f"use https, or set {flag} to send it anyway" if flag else "the server must use https"
    raise InsecureCredentials(
        f"refusing to send {what} to {host or url} over plain {scheme or 'text'}: it would "
        f"travel unencrypted; {remedy}"
    )


def same_origin(first: str, second: str) -> bool:
    """Whether two URLs have the same scheme, host and port (a redirect may keep credentials)."""
    a, b = urlsplit(first), urlsplit(second)
    default = {"http": 80, "https": 443}
    try:
        port_a = a.port or default.get(a.scheme.lower())
        port_b = b.port or default.get(b.scheme.lower())
    except ValueError:
        return False
    return (
        a.scheme.lower() == b.scheme.lower()
        and (a.hostname or "") == (b.hostname or "")
        and port_a == port_b
    )
