"""Worker process pools that are safe to start from any process.

A forked child inherits the parent's memory but only the thread that forked. When the parent
has other threads (torch's OpenMP pool after a model step, tokenizers' Rust pool, a Ray or gRPC
client), a lock one of them held at the fork stays locked forever in the child, and the child
hangs at its first use of that library: a compile whose model step loaded a model, then ran an
image op on 2 workers, could hang. So pools start their workers from a forkserver: a clean,
single-threaded process started once per parent process, which imports ``preload`` (so that
each worker does not import them again) and forks each worker from itself.

What a fork used to carry over implicitly must now be named: a worker imports the module that
defines the op or backend it runs (its class's ``__module__``, which registers it on import), so
ops and backends registered by modules outside benchc (a test's backend, a user's plugin) work in
workers as in the parent.

A worker exits when the process that made its pool dies, even by SIGKILL: nothing else would end
it. Its parent is the forkserver, which waits for every client (workers included) to close its
end of a pipe before it exits, and the worker waits for tasks on a queue whose write end it holds
itself, so a killed compile would leave the forkserver, its workers and the resource tracker
running forever. Each worker therefore watches the pool's owner (a pidfd on Linux, polling
elsewhere) and exits when it is gone; the forkserver and the resource tracker then follow.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

POLL_SECONDS = 0.5
"""How often a worker without pidfds checks that its pool's owner is alive."""


def process_pool(workers: int, preload: Sequence[str], initializer: Callable[..., Any] | None = None,
                 initargs: tuple[Any, ...] = ()) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes forked from the forkserver (``preload`` counts only for
    the first pool of a process, which starts the server)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_start_worker,
                               initargs=(os.getpid(), initializer, initargs))


def _start_worker(owner: int, initializer: Callable[..., Any] | None, initargs: tuple[Any, ...]) -> None:
    """Every worker's initializer: watch the pool's owner, then the caller's initializer."""
    watch_owner(owner)
    if initializer is not None:
        initializer(*initargs)


def watch_owner(pid: int) -> None:
    """End this process (at once, as SIGKILL would) when process ``pid`` has exited: a daemon
    thread waits on a pidfd of it (Linux >= 5.3), or polls it every POLL_SECONDS."""
    try:
        handle: int | None = os.pidfd_open(pid)
    except ProcessLookupError:  # it died before this worker started
        os._exit(1)
    except (AttributeError, OSError):  # no pidfd_open (not Linux, an old kernel, seccomp)
        handle = None
    threading.Thread(target=_wait_for_exit, args=(pid, handle), name="benchc-owner-watch",
                     daemon=True).start()


def _wait_for_exit(pid: int, handle: int | None) -> None:
    if handle is not None:
        while not select.select([handle], [], [])[0]:  # readable once the process has exited
            pass
    else:
        while _alive(pid):
            time.sleep(POLL_SECONDS)
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, as another user (a reused pid: stay, as before)
        return True
    return True

