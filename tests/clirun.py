"""Run ``pivoter`` command lines in tests, each in its own process, importing pivoter only once.

A real ``pivoter`` process spends most of its time starting Python and importing the daemon
(``kubernetes``, gRPC). Tests call :func:`pivoter` instead: it hands the command line to a fork
server, one per test process (so one per pytest-xdist worker), started the first time a test needs
it and stopped when the test process exits. The server (``python -m tests.clirun``) imports
:func:`pivoter.cli.main.main` and every command's implementation once
(:func:`pivoter.cli.main.import_handlers`), then reads one JSON request per line on its stdin and
forks a child per request. The child takes the request's environment (``os.environ`` replaced
entirely), working directory and stdin (the request's input, else ``/dev/null``), points its stdout
and stderr at pipes and runs ``main(argv)`` as the console script does (``sys.exit(main())``: an
uncaught exception prints its traceback and exits 1), then ends as an interpreter does: it waits
for non-daemon threads, runs the ``atexit`` handlers and flushes its output. The server kills a
child still running at the timeout (its whole session, so a hang or busy loop is reported, not
waited for) and answers one JSON line: the exit code (None when killed), stdout, stderr and the
seconds it took.

What a forked child cannot change is what Python reads only when it starts: ``PYTHONHASHSEED``,
``PYTHONPATH``, ``-X`` options, the locale. :func:`pivoter` refuses an environment that differs
from the server's in such a variable; ``fresh=True`` runs a real ``pivoter`` process instead.
``tests/unit/test_cli_bad_flags.py`` checks that the server answers as the console script does.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import locale
import os
import resource
import selectors
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSOLE_SCRIPT = (sys.executable, "-m", "pivoter.cli.main")
"""The real entry point, as the tests ran it before: what ``fresh=True`` runs."""

Main = Callable[[Sequence[str]], int]


def _startup_only(name: str) -> bool:
    """Whether Python reads the environment variable ``name`` only when the interpreter starts."""
    return name.startswith(("PYTHON", "LC_")) or name == "LANG"


# -- the server -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One command line to run, as the server receives it."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    input: bytes | None
    timeout: float | None
    address_space: int | None = None
    """``RLIMIT_AS`` of the child, in bytes (as ``prlimit --as``): memory tests."""

    def to_json(self) -> str:
        return json.dumps(
            {
                "argv": self.argv,
                "env": self.env,
                "cwd": self.cwd,
                "input": None if self.input is None else base64.b64encode(self.input).decode(),
                "timeout": self.timeout,
                "address_space": self.address_space,
            }
        )

    @classmethod
    def from_json(cls, line: str | bytes) -> Request:
        data = json.loads(line)
        raw = data["input"]
        return cls(
            argv=list(data["argv"]),
            env=dict(data["env"]),
            cwd=str(data["cwd"]),
            input=None if raw is None else base64.b64decode(raw),
            timeout=None if data["timeout"] is None else float(data["timeout"]),
            address_space=data.get("address_space"),
        )


@dataclass(frozen=True)
class Reply:
    """What one command did: exit code (None when killed at the timeout), output, duration."""

    code: int | None
    stdout: bytes
    stderr: bytes
    seconds: float

    def to_json(self) -> str:
        return json.dumps(
            {
                "code": self.code,
                "stdout": base64.b64encode(self.stdout).decode(),
                "stderr": base64.b64encode(self.stderr).decode(),
                "seconds": self.seconds,
            }
        )

    @classmethod
    def from_json(cls, line: str | bytes) -> Reply:
        data = json.loads(line)
        return cls(
            code=data["code"],
            stdout=base64.b64decode(data["stdout"]),
            stderr=base64.b64decode(data["stderr"]),
            seconds=float(data["seconds"]),
        )


def _exit_code(exc: SystemExit) -> int:
    """The status an interpreter exits with for an uncaught ``exc`` (printing a non-int code)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    sys.stderr.write(f"{exc.code}\n")
    return 1


def _child(main: Main, request: Request, stdin: int, out: int, err: int) -> None:
    """In the forked child: become the command, run it, end as an interpreter does. No return."""
    code = 1
    try:
        os.setsid()
        os.dup2(stdin, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (stdin, out, err):
            if fd > 2:
                os.close(fd)
        try:
            os.environ.clear()
            os.environ.update(request.env)
            os.chdir(request.cwd)
            if request.address_space is not None:
                limit = request.address_space
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            sys.argv = [CONSOLE_SCRIPT[2], *request.argv]
            code = main(request.argv)
        except SystemExit as exc:
            code = _exit_code(exc)
        except BaseException:
            traceback.print_exc()  # what the interpreter prints for an uncaught exception
            code = 1
        # What Py_FinalizeEx does before the process ends: wait for non-daemon threads, run the
        # atexit handlers, flush the standard streams (a failed flush exits 120).
        threading._shutdown()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                code = 120
    finally:
        os._exit(code)


def run_one(main: Main, request: Request) -> Reply:
    """Fork, run ``main(request.argv)`` in the child, collect its output; kill it at the timeout."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        for fd in (in_w, out_r, err_r):
            os.close(fd)
        _child(main, request, in_r, out_w, err_w)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    deadline = None if request.timeout is None else started + request.timeout
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    selector = selectors.DefaultSelector()
    for fd in chunks:
        selector.register(fd, selectors.EVENT_READ)
    pending = memoryview(request.input or b"")
    if pending:
        os.set_blocking(in_w, False)
        selector.register(in_w, selectors.EVENT_WRITE)
    else:
        os.close(in_w)
    killed = False
    while selector.get_map():
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            killed = True
            break
        for key, _ in selector.select(timeout=left):
            if key.fd == in_w:
                try:
                    pending = pending[os.write(in_w, pending[:65536]) :]
                except BlockingIOError:
                    continue
                except BrokenPipeError:  # the command stopped reading: as subprocess.run does
                    pending = pending[:0]
                if not pending:
                    selector.unregister(in_w)
                    os.close(in_w)
                continue
            data = os.read(key.fd, 65536)
            if data:
                chunks[key.fd].append(data)
            else:
                selector.unregister(key.fd)
    if killed and in_w in selector.get_map():
        os.close(in_w)
    selector.close()
    status = None
    while not killed:
        waited, raw = os.waitpid(pid, 0 if deadline is None else os.WNOHANG)
        if waited:
            status = os.waitstatus_to_exitcode(raw)
            break
        if deadline is not None and time.monotonic() > deadline:
            killed = True
            break
        time.sleep(0.005)
    if killed:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    for fd in chunks:
        os.close(fd)
    return Reply(
        code=None if killed else status,
        stdout=b"".join(chunks[out_r]),
        stderr=b"".join(chunks[err_r]),
        seconds=time.monotonic() - started,
    )


def serve() -> None:
    """Import pivoter once, then answer requests from stdin until it closes."""
    from pivoter.cli.main import import_handlers, main

    import_handlers()
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    # The children get fds 0 and 1 of their own; nothing of the server's may reach them, nor
    # anything stray reach the replies.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    for line in requests:
        reply = run_one(main, Request.from_json(line))
        replies.write(reply.to_json() + "\n")
        replies.flush()


# -- the client -----------------------------------------------------------------------------------


class ForkServer:
    """A running server (``python -m tests.clirun``) and the one pipe to it."""

    def __init__(self) -> None:
        self.env = dict(os.environ)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.clirun"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=str(ROOT),
            env=self.env,
        )
        self.owner = os.getpid()
        self.lock = threading.Lock()

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        input: bytes | None = None,
        timeout: float | None = 60,
        address_space: int | None = None,
    ) -> Reply:
        """Run ``pivoter ARGV`` in a forked child; refuses what only a fresh interpreter reads."""
        changed = sorted(
            name
            for name in {*env, *self.env}
            if _startup_only(name) and env.get(name) != self.env.get(name)
        )
        if changed:
            raise ValueError(
                f"{', '.join(changed)} take effect only when Python starts: run with fresh=True"
            )
        request = Request(list(argv), dict(env), cwd, input, timeout, address_space)
        with self.lock:
            assert self.process.stdin is not None
            assert self.process.stdout is not None
            try:
                self.process.stdin.write(request.to_json().encode() + b"\n")
                self.process.stdin.flush()
                line = self.process.stdout.readline()
            except BaseException:
                # Interrupted (a pytest timeout, Ctrl-C): the answer would go to the next request.
                self.process.kill()
                raise
        if not line:
            raise RuntimeError(f"the pivoter fork server died (exit {self.process.wait()})")
        return Reply.from_json(line)

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def close(self) -> None:
        """Stop the server: it exits when its stdin closes."""
        if self.owner != os.getpid():
            return
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


_servers: dict[int, ForkServer] = {}  # by the pid of the process that started it
_servers_lock = threading.Lock()


def server() -> ForkServer:
    """This process's fork server, started on first use and stopped when the process exits."""
    with _servers_lock:
        current = _servers.get(os.getpid())
        if current is None or not current.alive():
            current = _servers[os.getpid()] = ForkServer()
            atexit.register(current.close)
        return current


def _text(data: bytes) -> str:
    """``data`` as ``subprocess.run(..., text=True)`` decodes it (universal newlines)."""
    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def pivoter(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    input: str | None = None,
    timeout: float | None = 60,
    fresh: bool = False,
    address_space: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``pivoter ARGS`` as ``subprocess.run(..., capture_output=True, text=True)`` would.

    ``env`` (default: this process's environment now) replaces the command's environment, ``cwd``
    (default: the current directory) is where it runs, ``input`` is its stdin (default: empty).
    Past ``timeout`` seconds the command is killed and :class:`subprocess.TimeoutExpired` raised.
    ``fresh=True`` runs a real ``pivoter`` process: for what only a starting interpreter reads.
    ``address_space`` caps the command's virtual memory in bytes, as ``prlimit --as`` does (a
    memory test asserts a clean refusal under it, not a crash).
    """
    command = [*CONSOLE_SCRIPT, *args]
    if fresh:
        if address_space is not None:
            command = ["prlimit", f"--as={address_space}", "--", *command]
        return subprocess.run(
            command,
            env=env,
            cwd=cwd,
            input=input,
            stdin=subprocess.DEVNULL if input is None else None,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    reply = server().run(
        args,
        env=dict(os.environ if env is None else env),
        cwd=os.fspath(cwd) if cwd is not None else os.getcwd(),
        input=None if input is None else input.encode(locale.getpreferredencoding(False)),
        timeout=timeout,
        address_space=address_space,
    )
    stdout, stderr = _text(reply.stdout), _text(reply.stderr)
    if reply.code is None:
        raise subprocess.TimeoutExpired(command, timeout or 0, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(command, reply.code, stdout, stderr)


if __name__ == "__main__":
    serve()
