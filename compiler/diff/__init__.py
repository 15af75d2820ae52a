"""``benchc diff``: what changed between two versions of a benchmark, and why.

* ``core``: spec and lock changes, the signals they give the item level, the ``Diff`` record and
  the version bump the changes need (its names are this package's API, re-exported here);
* ``inputs``: the two sides (a spec, a manifest folder or a lock file, from the working tree or
  a git revision);
* ``items``: the item level, two items tables joined on ``item_id``, and the ``Signals`` that
  attribute its changes to causes;
* ``render``: text, Markdown and JSON output;
* ``version``: the compile-time version check of bundled specs against their committed locks.
"""

from .core import (ADDABLE, BUMPS, ID_KEYS, LOCK_RECORDS, MISSING, PROSE_KEYS, SECTION_ORDER, SECTIONS, UNCOMPARABLE,
                   Change, Diff, SideInfo, bump_made, compare, diff_documents, flatten, lock_changes,
                   needed_bump, section_of, side_info, signals_of, spec_changes)
from .items import Signals

__all__ = ["ADDABLE", "BUMPS", "ID_KEYS", "LOCK_RECORDS", "MISSING", "PROSE_KEYS", "SECTION_ORDER", "SECTIONS",
           "UNCOMPARABLE", "Change", "Diff", "SideInfo", "Signals", "bump_made", "compare", "diff_documents",
           "flatten", "lock_changes", "needed_bump", "section_of", "side_info", "signals_of", "spec_changes"]
