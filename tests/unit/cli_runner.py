"""Run many ``pivoter`` command lines, each in its own process, without paying the import each time.

``python -m tests.unit.cli_runner`` imports :func:`pivoter.cli.main.main` and every command's
implementation once (:func:`pivoter.cli.main.import_handlers`: ``pivoter`` itself imports only the
handler it runs, which each child would otherwise import again), then reads one JSON
request per line on stdin (``{"argv": [...], "timeout": seconds}``) and forks a child per request:
the child points its stdout and stderr at pipes, runs ``main(argv)`` exactly as the console script
does (``sys.exit(main())``: an uncaught exception prints Python's traceback and exits 1) and exits
with its status. The runner kills a child still running at the timeout (so a hang or busy loop is
reported, not waited for) and answers one JSON line: exit code (None when killed), stdout, stderr
and the seconds it took. Used by ``tests/unit/test_cli_bad_flags.py``; a real ``pivoter``
subprocess per command checks there that the answers are the same.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any


def _child(main: Callable[[Sequence[str]], int], argv: list[str], out: int, err: int) -> None:
    code = 1
    try:
        os.setsid()
        os.dup2(out, 1)
        os.dup2(err, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        try:
            code = main(argv)
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                sys.stderr.write(f"{exc.code}\n")
                code = 1
        except BaseException:
            traceback.print_exc()  # what the interpreter prints for an uncaught exception
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def run_one(
    main: Callable[[Sequence[str]], int], argv: list[str], timeout: float
) -> dict[str, Any]:
    """Fork, run ``main(argv)`` in the child, collect its output; kill it after ``timeout``."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(out_r)
        os.close(err_r)
        _child(main, argv, out_w, err_w)
    os.close(out_w)
    os.close(err_w)
    deadline = started + timeout
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    selector = selectors.DefaultSelector()
    for fd in chunks:
        selector.register(fd, selectors.EVENT_READ)
    killed = False
    while selector.get_map():
        left = deadline - time.monotonic()
        if left <= 0:
            killed = True
            break
        for key, _ in selector.select(timeout=left):
            data = os.read(key.fd, 65536)
            if data:
                chunks[key.fd].append(data)
            else:
                selector.unregister(key.fd)
    status = None
    while not killed:
        waited, raw = os.waitpid(pid, os.WNOHANG)
        if waited:
            status = os.waitstatus_to_exitcode(raw)
            break
        if time.monotonic() > deadline:
            killed = True
            break
        time.sleep(0.01)
    if killed:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    selector.close()
    for fd in chunks:
        os.close(fd)
    return {
        "code": None if killed else status,
        "stdout": b"".join(chunks[out_r]).decode("utf-8", "replace"),
        "stderr": b"".join(chunks[err_r]).decode("utf-8", "replace"),
        "seconds": time.monotonic() - started,
    }


def serve() -> None:
    """Answer requests from stdin until it closes."""
    from pivoter.cli.main import import_handlers, main

    import_handlers()
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    for line in sys.stdin:
        request = json.loads(line)
        reply = run_one(main, list(request["argv"]), float(request["timeout"]))
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve()
