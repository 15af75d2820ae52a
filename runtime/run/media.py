"""Where a backend reads a request's media: item media from the compile cache, earlier stages'
audio from the response store's blob folder.

Its own module because every executor strategy builds one where batches run (this process, a
pool worker, a Ray actor) from the two folders' paths, and none of them should import another's
module for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import Problem, RunError

from ...defaults import DEFAULT_CACHE

CACHE_HINT = f"pass the --cache the manifest was compiled with (default {DEFAULT_CACHE})"


class MediaSource:
    """Reads item media from the compile cache and earlier responses' audio from the store."""

    def __init__(self, cache_dir: Path, store_dir: Path) -> None:
        try:
            self.cache = ContentStore(cache_dir)
        except OSError as exc:
            raise RunError(Problem(f"cannot open the compile cache: {exc.strerror or exc}", file=str(cache_dir),
                                   key="--cache", hint=CACHE_HINT)) from None
        self.blobs = ContentStore(Path(store_dir) / "blobs")

    def __call__(self, kind: str, sha256: str) -> bytes:
        for place in (self.cache, self.blobs):
            if place.has(sha256):
                return place.get(sha256)
        raise RunError(Problem(f"{kind} {sha256[:12]} is in neither the compile cache nor the response store",
                               file=str(self.cache.root), key="--cache", hint=CACHE_HINT))

    def check_items(self, items: pl.DataFrame) -> None:
        """Every medium the items send is in the compile cache: checked before the first request."""
        shas = sorted({m["sha256"] for media in items["media"] for m in json.loads(media)})
        missing = [s for s in shas if not self.cache.has(s)]
        if missing:
            raise RunError(Problem(f"{len(missing)} of the manifest's {len(shas)} media files are not in the "
                                   "compile cache", file=str(self.cache.root), key="--cache", hint=CACHE_HINT))
