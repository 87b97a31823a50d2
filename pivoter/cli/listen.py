"""Check, before a server starts, that it can listen where the command line says.

gRPC reports a failed bind as a C-core log line plus a generic error, and a host name that does
not resolve surfaces as ``[Errno -2]``; :func:`check_bindable` resolves the host and binds each of
its addresses (as the servers will) so that ``catalog serve`` fails at start with one line
naming the address and the reason. The servers' own bind errors still apply if the port is taken
in between.
"""

from __future__ import annotations

import socket

__all__ = ["check_bindable"]


def check_bindable(host: str, port: int, what: str, *, ipv4_only: bool = False) -> None:
    """Raise OSError (one line: ``what``, address, reason) when ``host:port`` cannot be bound.

    ``ipv4_only``: the server is an IPv4 one (Python's ``http.server``), so only IPv4 addresses
    of ``host`` count.
    """
    family = socket.AF_INET if ipv4_only else socket.AF_UNSPEC
    try:
        infos = socket.getaddrinfo(
            host or None, port, family, socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        if ipv4_only and _resolves(host, port):
            raise OSError(
                f"{what}: {host!r} has no IPv4 address (this server listens on IPv4)"
            ) from None
        raise OSError(f"{what}: host {host!r} cannot be resolved ({exc.strerror})") from None
    except (UnicodeError, ValueError) as exc:
        raise OSError(f"{what}: host {host!r} is not a valid host name ({exc})") from None
    first: str = ""
    for af, kind, proto, _, address in infos:
        with socket.socket(af, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(address)
                return  # one address is enough: the servers listen where they can, as gRPC does
            except OSError as exc:
                shown = f"[{address[0]}]" if af == socket.AF_INET6 else address[0]
                first = first or f"cannot listen on {shown}:{port}: {exc.strerror or exc}"
    raise OSError(f"{what}: {first or f'{host!r} has no address'}")


def _resolves(host: str, port: int) -> bool:
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        return False
    return True
