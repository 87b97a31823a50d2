"""Network reads that end: an overall deadline and a byte cap on every HTTP exchange, linear
splitting of streamed JSON lines, and the rule for when a credential may travel over plain http.

Lives in :mod:`resolver` because both the catalog clients here and the bundle sources in
:mod:`provisioners` (which may import resolver, never the other way round) use it. Modules:
:mod:`.budget` (the deadline, stall timeout and byte cap of one transfer), :mod:`.http` (HTTP
connections whose every socket wait is clipped to a budget, and body readers with a size cap),
:mod:`.lines` (newline splitting that copies each byte a bounded number of times),
:mod:`.credentials` (credentials as text: what a token, username or password may hold, checked
where each enters; loopback detection and the plain-http credential check).
"""

from resolver.net.budget import Budget, DeadlineExceeded, NetError, Stalled, TooLarge
from resolver.net.credentials import (
    InsecureCredentials,
    InvalidCredential,
    UnsendableText,
    basic_credential,
    bearer_token,
    check_credential_transport,
    is_loopback,
    read_token_file,
)
from resolver.net.http import open_connection, read_body
from resolver.net.lines import LineSplitter, LineTooLong

__all__ = [
    "Budget",
    "DeadlineExceeded",
    "InsecureCredentials",
    "InvalidCredential",
    "LineSplitter",
    "LineTooLong",
    "NetError",
    "Stalled",
    "TooLarge",
    "UnsendableText",
    "basic_credential",
    "bearer_token",
    "check_credential_transport",
    "is_loopback",
    "open_connection",
    "read_body",
    "read_token_file",
]
