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
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any


def process_pool(workers: int, preload: Sequence[str], initializer: Callable[..., Any] | None = None,
                 initargs: tuple[Any, ...] = ()) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes forked from the forkserver (``preload`` counts only for
    the first pool of a process, which starts the server)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=initializer,
                               initargs=initargs)

