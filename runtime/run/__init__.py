"""``benchc run``: a manifest -> responses (``responses.parquet``) and ``run.json``.

Its API is re-exported here and loaded on first use (``__getattr__``), so that importing one
module of the package (``runfolder``, as ``score`` and ``report`` do) does not load the executors
and backends. See README.md for what each module does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .core import (CHOICE_REVISION, RESPONSE_SCHEMA, RunOptions, StageOutcome, build_requests, item_choices,
                       request_digest, request_key, run_manifest, stage_backend, stage_requests)
    from .plan import StagePlan, plan_manifest
    from .executor import LOCAL, ExecutorChoice, execute
    from .overrides import check_backend_overrides, parse_backend_overrides
    from .runfolder import RESPONSES_FILE, RUN_FILE, manifest_items, open_manifest, read_responses, read_run_record
    from .store import ResponseStore, StoredResponse
    from .media import MediaSource

_EXPORTS = {  # name -> the module of this package that defines it
    "CHOICE_REVISION": "core",
    "RESPONSE_SCHEMA": "core",
    "RunOptions": "core",
    "StageOutcome": "core",
    "build_requests": "core",
    "item_choices": "core",
    "request_digest": "core",
    "request_key": "core",
    "run_manifest": "core",
    "stage_backend": "core",
    "stage_requests": "core",
    "StagePlan": "plan",
    "plan_manifest": "plan",
    "LOCAL": "executor",
    "ExecutorChoice": "executor",
    "execute": "executor",
    "check_backend_overrides": "overrides",
    "parse_backend_overrides": "overrides",
    "RESPONSES_FILE": "runfolder",
    "RUN_FILE": "runfolder",
    "manifest_items": "runfolder",
    "open_manifest": "runfolder",
    "read_responses": "runfolder",
    "read_run_record": "runfolder",
    "ResponseStore": "store",
    "StoredResponse": "store",
    "MediaSource": "media",
}

__all__ = ["CHOICE_REVISION", "ExecutorChoice", "LOCAL", "MediaSource", "RESPONSES_FILE", "RESPONSE_SCHEMA",
           "RUN_FILE", "ResponseStore", "RunOptions", "StageOutcome", "StagePlan", "StoredResponse",
           "build_requests", "check_backend_overrides", "execute", "item_choices", "manifest_items",
           "open_manifest", "parse_backend_overrides", "plan_manifest", "read_responses", "read_run_record",
           "request_digest", "request_key", "run_manifest", "stage_backend", "stage_requests"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
