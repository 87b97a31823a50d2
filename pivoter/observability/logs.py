"""Process-wide logging set-up for the daemon: one JSON object per line, or plain text.

Called once by ``pivoter run`` (``--log-format``, ``--log-level``). JSON lines carry ``ts``
(RFC 3339, UTC), ``level``, ``logger``, ``msg``, any ``extra={...}`` fields and ``exc`` for
tracebacks, which is what log collectors (Loki, Elasticsearch, Cloud Logging) index without
parsing rules.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from typing import Any, TextIO

__all__ = ["LEVELS", "JSONFormatter", "setup_logging"]

LEVELS = ("debug", "info", "warning", "error")
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JSONFormatter(logging.Formatter):
    """Formats a record as one JSON object on one line."""

    def format(self, record: logging.LogRecord) -> str:
        """See :class:`logging.Formatter`."""
        entry: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, tz=dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def setup_logging(fmt: str = "json", level: str = "info", stream: TextIO | None = None) -> None:
    """Send every logger's records at ``level`` and above to ``stream`` (stderr) in ``fmt``."""
    if fmt not in ("json", "text"):
        raise ValueError(f"log format must be json or text, not {fmt!r}")
    if level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, not {level!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    if fmt == "json":
        handler.setFormatter(JSONFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # The HTTP client logs every connection at debug; keep it at warning unless asked.
    logging.getLogger("urllib3").setLevel(logging.WARNING if level != "debug" else logging.DEBUG)
    # Its retries of a broken connection are warnings; the request that finally fails is
    # reported by its caller, once. Keep them for debug.
    logging.getLogger("urllib3.connectionpool").setLevel(
        logging.ERROR if level != "debug" else logging.DEBUG
    )
