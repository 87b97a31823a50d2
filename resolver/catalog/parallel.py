"""Load the files of a catalog directory on every core the process may use.

A cold load is almost all parsing (about 95 % of it for the YAML certified catalog), and parsing
holds the GIL, so :func:`load_files` forks worker processes (one per core but one: this process
works too) when there is enough to parse (:data:`PARALLEL_MIN_BYTES`) and more than one core;
small catalogs stay in this process, where starting workers would cost more than it saves.

A worker runs the very function this process would (the caller's ``load_one``: the file read
through :mod:`resolver.catalog.guard` with its (device, inode) expectation, parsed, decoded) and
sends back the file's problems or its decoded objects (and served lines, when asked for) in the
pickled form of the parsed-catalog cache (:func:`resolver.catalog.cache.pack_entry`): this process
unpickles them with the cache's
model-only unpickler and can write the cache from the same bytes. Workers take the largest files
first; this process takes the smallest, and collects results between two files, so the work
shares itself out whether parsing or shipping objects back costs more (YAML or JSON). Results are
returned in file order, so problems are listed as one process lists them. A worker that dies
(killed, out of memory) or fails on a file costs only time: what it did not return is loaded in
this process, with the same result or the same exception as without workers.
Called by :mod:`resolver.catalog.load`.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from resolver.catalog.cache import pack_entry, unpack_entry
from resolver.catalog.decode import CatalogObject
from resolver.catalog.errors import Problem
from resolver.catalog.jsonl import FileLines
from resolver.catalog.walk import CatalogFile

if TYPE_CHECKING:  # multiprocessing is imported when workers start: small loads never need it
    from multiprocessing.connection import Connection
    from multiprocessing.context import BaseContext
    from multiprocessing.process import BaseProcess

__all__ = ["PARALLEL_MIN_BYTES", "FileLoader", "LoadedFile", "available_cores", "load_files"]

PARALLEL_MIN_BYTES = 2 << 20
"""Bytes to parse below which files are loaded in this process. Starting a worker costs a few
milliseconds, but on a busy machine the second core is not always free: the 1.8 MB templates
directory (70 ms in one process) took 20 ms longer with workers; the 14-24 MB catalogs gain."""

FileLoader = Callable[
    [str, CatalogFile, int], tuple[list[CatalogObject], list[Problem], FileLines | None]
]
"""Loads one file: ``(real root, file, max_file_bytes) -> (objects, problems, lines)``; the
file's served lines (:mod:`resolver.catalog.jsonl`) when the caller renders them, else None."""


@dataclass(slots=True)
class LoadedFile:
    """What one file gave: its objects and lines, or its problems (then nothing else), and the
    cache bytes.

    ``blob`` is ``objects`` and ``lines`` pickled for the parsed-catalog cache when a worker
    loaded the file (and the caller asked to keep them), else None: a file loaded here is pickled
    only if the cache is written (not for a load that fails).
    """

    objects: list[CatalogObject]
    lines: FileLines | None
    problems: list[Problem]
    blob: bytes | None


def available_cores() -> int:
    """Return how many cores this process may run on (its CPU affinity where known)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def load_files(
    root: str,
    refs: Sequence[CatalogFile],
    load_one: FileLoader,
    *,
    max_file_bytes: int,
    keep_blobs: bool,
    workers: int | None = None,
    min_bytes: int = PARALLEL_MIN_BYTES,
) -> list[LoadedFile]:
    """Load ``refs`` (files under the real path ``root``) with ``load_one``, in file order.

    Uses ``workers`` processes (default: :func:`available_cores`) when there are at least two
    files and ``min_bytes`` to read, and the platform can fork; otherwise loads them here.
    ``keep_blobs`` keeps the pickled objects workers send back (:attr:`LoadedFile.blob`).
    """
    count = min(available_cores() if workers is None else workers, len(refs))
    total = sum(ref.size for ref in refs)
    if count < 2 or total < min_bytes or not hasattr(os, "fork"):
        return [_load_here(root, ref, load_one, max_file_bytes) for ref in refs]
    return _load_in_workers(
        root, refs, load_one, max_file_bytes=max_file_bytes, keep_blobs=keep_blobs, count=count
    )


def _load_here(
    root: str, ref: CatalogFile, load_one: FileLoader, max_file_bytes: int
) -> LoadedFile:
    objects, problems, lines = load_one(root, ref, max_file_bytes)
    if problems:
        return LoadedFile([], None, problems, None)
    return LoadedFile(objects, lines, [], None)


def _load_in_workers(
    root: str,
    refs: Sequence[CatalogFile],
    load_one: FileLoader,
    *,
    max_file_bytes: int,
    keep_blobs: bool,
    count: int,
) -> list[LoadedFile]:
    import multiprocessing  # here, not at the top: see TYPE_CHECKING above

    results: list[LoadedFile | None] = [None] * len(refs)
    order = sorted(range(len(refs)), key=lambda i: refs[i].size, reverse=True)
    queue = _Queue(order)
    context = multiprocessing.get_context("fork")
    workers: list[_Worker] = []
    clean = False
    try:
        for _ in range(count - 1):
            held = [end for worker in workers for end in (worker.tasks, worker.results)]
            workers.append(_Worker.start(context, root, refs, load_one, max_file_bytes, held=held))
        for worker in workers:
            worker.feed(queue)
        while True:
            _collect(workers, queue, results, keep_blobs, block=False)
            index = queue.take_last()
            if index is None:
                break
            results[index] = _load_here(root, refs[index], load_one, max_file_bytes)
        while any(worker.pending for worker in workers):
            _collect(workers, queue, results, keep_blobs, block=True)
        clean = True
    finally:
        for worker in workers:
            worker.stop(kill=not clean)
    # A file a worker did not return (it died, or failed unexpectedly) is loaded here: the same
    # result, or the same exception, as without workers.
    return [
        done if done is not None else _load_here(root, refs[i], load_one, max_file_bytes)
        for i, done in enumerate(results)
    ]


class _Queue:
    """The files no one has started, largest first: workers take the front, this process the end."""

    def __init__(self, order: list[int]) -> None:
        self._order = order
        self._front = 0
        self._back = len(order)

    def take_first(self) -> int | None:
        if self._front >= self._back:
            return None
        self._front += 1
        return self._order[self._front - 1]

    def take_last(self) -> int | None:
        if self._front >= self._back:
            return None
        self._back -= 1
        return self._order[self._back]


_QUEUED_PER_WORKER = 4
"""Files handed to a worker ahead: it goes on with the next ones while this process, busy with a
file of its own, has not yet taken in its results."""


class _Worker:
    """One forked worker process and its two pipes (files to load in, results out)."""

    def __init__(self, process: BaseProcess, tasks: Connection, results: Connection) -> None:
        self.process = process
        self.tasks = tasks
        self.results = results
        self.pending: set[int] = set()  # files handed to it and not yet returned
        self.alive = True

    @classmethod
    def start(
        cls,
        context: BaseContext,
        root: str,
        refs: Sequence[CatalogFile],
        load_one: FileLoader,
        max_file_bytes: int,
        *,
        held: Sequence[Connection] = (),
    ) -> _Worker:
        """Fork a worker; ``held`` are this process's ends of the other workers' pipes (the
        child closes them with its copies of its own pipes' other ends, see :func:`_serve`)."""
        task_out, task_in = context.Pipe(duplex=False)
        result_out, result_in = context.Pipe(duplex=False)
        process = context.Process(  # type: ignore[attr-defined]
            target=_serve,
            args=(task_out, result_in),
            kwargs={
                "root": root,
                "refs": refs,
                "load_one": load_one,
                "max_file_bytes": max_file_bytes,
                "inherited": (*held, task_in, result_out),
            },
            daemon=True,
        )
        process.start()
        task_out.close()
        result_in.close()
        return cls(process, task_in, result_out)

    def feed(self, queue: _Queue) -> None:
        """Hand it files from the front of the queue until it has enough ahead."""
        while self.alive and len(self.pending) < _QUEUED_PER_WORKER:
            index = queue.take_first()
            if index is None:
                return
            try:
                self.tasks.send(index)
            except OSError:  # it died: the file is loaded in this process
                self.alive = False
                return
            self.pending.add(index)

    def stop(self, *, kill: bool) -> None:
        """Tell it to finish (or kill it after a failure here) and reap it."""
        with contextlib.suppress(OSError):
            self.tasks.send(None)
        self.tasks.close()
        if kill:
            self.process.terminate()
        self.process.join()
        self.results.close()


def _collect(
    workers: list[_Worker],
    queue: _Queue,
    results: list[LoadedFile | None],
    keep_blobs: bool,
    *,
    block: bool,
) -> None:
    """Take in what the workers have sent (waiting for something if ``block``); refill them."""
    live = [w for w in workers if w.alive and w.pending]
    if not live:
        return
    from multiprocessing.connection import wait

    waitables: list[Any] = [w.results for w in live] + [w.process.sentinel for w in live]
    ready = set(wait(waitables, timeout=None if block else 0))
    for worker in live:
        if worker.results not in ready and worker.process.sentinel not in ready:
            continue
        try:
            while worker.results.poll():
                index, blob, problems = worker.results.recv()
                worker.pending.discard(index)
                if blob is not None or problems:
                    results[index] = _received(blob, problems, keep_blobs)
        except (EOFError, OSError):
            worker.alive = False
        if worker.process.sentinel in ready and not worker.results.poll():
            worker.alive = False  # it died: its pending files are loaded in this process
        if not worker.alive:
            worker.pending.clear()
        else:
            worker.feed(queue)


def _serve(
    tasks: Connection,
    results: Connection,
    *,
    root: str,
    refs: Sequence[CatalogFile],
    load_one: FileLoader,
    max_file_bytes: int,
    inherited: Sequence[Connection] = (),
) -> None:
    """A worker's loop: load each file it is handed; send back its pickled objects or problems.

    A file whose loading raises is sent back empty, for the parent to load (and raise) itself.
    An interrupt is the parent's to handle (it stops its workers); inherited handlers are not run.
    First it closes ``inherited``, the parent's ends of the pipes that ``fork`` copied into it:
    holding the write end of its own task pipe, a worker whose parent died (killed for want of
    memory, or by a timeout) waited for a task forever, holding its memory.
    """
    for end in inherited:
        end.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Results go out from a thread: a result larger than the pipe's buffer waits until the parent
    # is between two of its own files, and the next file should not wait with it.
    outbox: queue.SimpleQueue[tuple[int, bytes | None, list[Problem]] | None] = queue.SimpleQueue()
    sender = threading.Thread(target=_send_all, args=(outbox, results))
    sender.start()
    try:
        while True:
            try:
                index = tasks.recv()
            except EOFError:
                return
            if index is None:
                return
            outbox.put((index, *_load_packed(root, refs[index], load_one, max_file_bytes)))
    finally:
        outbox.put(None)
        sender.join()


def _load_packed(
    root: str, ref: CatalogFile, load_one: FileLoader, max_file_bytes: int
) -> tuple[bytes | None, list[Problem]]:
    """Load one file in a worker: its pickled objects (``b""`` with problems), or None when
    loading raised (a MemoryError included), for the parent to load it. The objects die with
    this call, so a worker never holds two files' objects at once."""
    try:
        objects, problems, lines = load_one(root, ref, max_file_bytes)
        return (b"" if problems else pack_entry(objects, lines)), problems
    except Exception:
        return None, []


def _send_all(
    outbox: queue.SimpleQueue[tuple[int, bytes | None, list[Problem]] | None], results: Connection
) -> None:
    """Send the worker's results in order. A result too large to pickle in the memory left (a
    MemoryError, printed as a thread's traceback before) is sent as "load it yourself", so the
    parent loads that file with its own memory and the same outcome as without workers."""
    while (message := outbox.get()) is not None:
        try:
            try:
                results.send(message)
            except MemoryError:
                results.send((message[0], None, []))
        except (OSError, MemoryError):  # the parent is gone or gave up on this worker
            return


def _received(blob: bytes | None, problems: list[Problem], keep_blobs: bool) -> LoadedFile | None:
    if problems:
        return LoadedFile([], None, problems, None)
    entry = unpack_entry(blob or b"")
    if entry is None:  # cannot happen with our own pickles; load it here if it ever does
        return None
    objects, lines = entry
    return LoadedFile(objects, lines, [], blob if keep_blobs else None)
