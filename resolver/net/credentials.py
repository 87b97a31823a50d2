"""When a credential may be sent: never over plain http to another machine unless asked.

A bearer token or a password sent over plain http can be read and replayed by anyone on the path.
Over https it is protected; over plain http it is only safe when the peer is this machine
(loopback). Everything else needs an explicit opt-in, whose name the error gives
(``--insecure-send-token``, ``insecureSendToken``...). :func:`check_credential_transport` is the
check every client that attaches a credential calls before sending it, for the first request and
for every redirect; :func:`same_origin` is what decides whether a redirect may carry it at all.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

_ENCRYPTED = frozenset({"https", "grpcs", "ssh"})


class InsecureCredentials(ValueError):
    """A credential would travel unencrypted to another machine; the message names the opt-in."""


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
