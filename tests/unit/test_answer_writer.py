"""A handler that writes its answer after the server stopped gets a clean ConnectionResetError,
and leaves no coroutine behind that was never awaited (CI once failed on that warning, raised
while the server of tests/unit/test_http_serving.py was stopping)."""

from __future__ import annotations

import asyncio
import gc
import warnings
from types import SimpleNamespace
from typing import Any, cast

import pytest

from pivoter.httpserving import ConnectionLimits, _AnswerWriter, _Exchange


def test_writing_after_the_loop_closed_resets_and_leaves_no_unawaited_coroutine() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    sent: list[bytes] = []

    async def send(piece: bytes) -> None:
        sent.append(piece)

    connection = SimpleNamespace(loop=loop, limits=ConnectionLimits(), send=send)
    writer = _AnswerWriter(_Exchange(cast(Any, connection), b""))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ConnectionResetError, match="shutting down"):
            writer.write(b"HTTP/1.1 200 OK\r\n\r\n")
        gc.collect()
    assert sent == []
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
