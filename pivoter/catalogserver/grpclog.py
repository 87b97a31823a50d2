"""One log line, not a traceback, when a gRPC peer sends bytes that are not a valid message.

grpcio logs a request it cannot decode with ``logging.exception`` (a full traceback for what is
only a client's mistake; the client gets INTERNAL). :func:`install` adds a filter to grpcio's
logger that turns exactly that record, when the cause is protobuf's ``DecodeError``, into one
WARNING line naming the error; every other record (a serializer that fails on our own answer is a
bug) keeps its traceback. Installed by :func:`pivoter.catalogserver.grpcserver.build_server`.
"""

from __future__ import annotations

import logging

from google.protobuf.message import DecodeError

__all__ = ["install"]

_LOGGER = "grpc._common"
_MESSAGE = "Exception deserializing message!"


class _MalformedMessages(logging.Filter):
    """Rewrites grpcio's "Exception deserializing message!" records caused by DecodeError."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep every record; shorten the one about an undecodable message."""
        exc = record.exc_info[1] if record.exc_info else None
        if record.msg == _MESSAGE and isinstance(exc, DecodeError):
            record.msg = "a gRPC peer sent bytes that are not a valid message (%s)"
            record.args = (exc,)
            record.exc_info = None
            record.exc_text = None
            record.levelno = logging.WARNING
            record.levelname = logging.getLevelName(logging.WARNING)
        return True


_FILTER = _MalformedMessages()


def install() -> None:
    """Add the filter to grpcio's logger (once)."""
    logger = logging.getLogger(_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
