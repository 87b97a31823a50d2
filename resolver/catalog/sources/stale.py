"""How a catalog server says that the content it serves is stale, and why.

``pivoter catalog serve`` keeps serving the last good catalog when its directory turns bad; it then
advertises the reason to every client: the HTTP response header :data:`STALE_HEADER` (on
``/api/v1/all`` and ``/api/v1/metas``, 200 and 304 answers alike) and the gRPC initial metadata
key :data:`STALE_METADATA` (on every ``api.Registry`` and ``api.ExperimentalRegistry`` call). The
value is one printable ASCII line (:func:`encode_reason`); the header or key is absent while the
content is current. Other servers (catalogd, ``opm serve``) never send it. Read by
:mod:`.catalogd` and :mod:`.registry` into their ``stale`` attribute; written by
:mod:`pivoter.catalogserver`.
"""

from __future__ import annotations

__all__ = ["MAX_REASON_CHARS", "STALE_HEADER", "STALE_METADATA", "encode_reason"]

STALE_HEADER = "X-Pivoter-Stale"
STALE_METADATA = "x-pivoter-stale"
MAX_REASON_CHARS = 1000
"""Longest reason sent (header and metadata sizes are limited; the first findings are enough)."""


def encode_reason(reason: str) -> str:
    """``reason`` as one printable ASCII line of at most :data:`MAX_REASON_CHARS` characters
    (non-ASCII characters as ``\\u`` escapes, control characters as spaces)."""
    text = reason.encode("ascii", "backslashreplace").decode("ascii")
    text = " ".join("".join(c if " " <= c <= "~" else " " for c in text).split())
    if len(text) > MAX_REASON_CHARS:
        text = text[: MAX_REASON_CHARS - 3] + "..."
    return text or "stale"
