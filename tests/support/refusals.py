"""One check for the backend strings a backend must refuse before any request."""

from __future__ import annotations

import pytest

from benchc.compiler.errors import BackendError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import make_backend


def assert_refused(refused: dict[str, str], generation: Generation, task: str) -> None:
    """Each backend string in ``refused`` fails to build with a message matching its value."""
    for spec, message in refused.items():
        with pytest.raises(BackendError, match=message):
            make_backend(spec, generation, task)
