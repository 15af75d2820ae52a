"""Answers and items in other tools' formats: ``benchc import`` (answer files and the logs of
lm-eval, lmms-eval and inspect-ai -> a run folder) and ``benchc export`` (a manifest as fine-tuning
conversations; a scored run as lm-eval results or an inspect-ai log).

Its API is re-exported here and loaded on first use (``__getattr__``). The functions named like
their module (``import_answers``, ``export``, ``export_inspect``) are read from the module.
See README.md for what each module does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .import_answers import HARNESS_FORMATS, ImportResult
    from .answer_files import ImportOptions
    from .export import ExportResult, check_export_format
    from .export_lmeval import LmEvalExport, export_lm_eval
    from .export_inspect import InspectExport

_EXPORTS = {  # name -> the module of this package that defines it
    "HARNESS_FORMATS": "import_answers",
    "ImportResult": "import_answers",
    "ImportOptions": "answer_files",
    "ExportResult": "export",
    "check_export_format": "export",
    "LmEvalExport": "export_lmeval",
    "export_lm_eval": "export_lmeval",
    "InspectExport": "export_inspect",
}

__all__ = ["ExportResult", "HARNESS_FORMATS", "ImportOptions", "ImportResult", "InspectExport", "LmEvalExport",
           "check_export_format", "export_lm_eval"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
