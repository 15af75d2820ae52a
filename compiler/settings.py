"""Sweeps over a run's settings (``[generation]``): each grid point of the swept keys makes every
item once more, as an item of its own whose attributes hold its settings.

``[generation] temperature = { grid = [0.2, 0.7, 1.0] }`` makes three items of each variant:
``r1#rotated[angle=90]/generation[temperature=0.2]`` and so on, each with the attribute
``temperature``, so a metric's ``by = ["temperature"]`` gives a row per setting and the runtime
asks each item with its own settings (``Generation.for_item``). A ``choice`` draws one value per
item from the seed derived from the item's path, as a node's choice does; it adds no item and
no id segment. Without sweeps nothing here changes an item (ids, attributes, digests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import SpecError
from .expand import variant_segment
from .seeds import derive_seed
from .spec.parse import LoadedSpec
from .sweep import Sweep

SEGMENT = "generation"
"""The id path segment of a setting: ``generation[temperature=0.7]``."""


@dataclass(frozen=True)
class Setting:
    """One item's run settings: its id segment (None when only choices are swept) and attributes."""

    segment: str | None
    attrs: dict[str, Any]

    def path(self, variant_path: str) -> str:
        """The item's variant path with this setting's segment after it."""
        return "/".join(part for part in (variant_path, self.segment or "") if part)


def settings_for(sweep: Sweep | None, spec_seed: int, record_id: str, variant_path: str) -> list[Setting | None]:
    """The settings an item of ``variant_path`` is made with: one per grid point (choices drawn
    from the item's own seed), or [None] when nothing is swept."""
    if sweep is None:
        return [None]
    out: list[Setting | None] = []
    for point in sweep.grid_points():
        segment = variant_segment(SEGMENT, point, None) if point else None
        setting = Setting(segment, dict(point))
        chosen = sweep.draw(derive_seed(spec_seed, record_id, f"{setting.path(variant_path)}#{SEGMENT}"))
        out.append(Setting(segment, {**point, **chosen}))
    return out


def points(sweep: Sweep | None) -> int:
    """How many items a sweep makes of each variant."""
    return 1 if sweep is None else len(sweep.grid_points())


def names(sweep: Sweep | None) -> frozenset[str]:
    """The attribute names a sweep gives every item."""
    return frozenset() if sweep is None else frozenset({*sweep.grid, *sweep.choice})


def with_setting(loaded: LoadedSpec, attrs: dict[str, Any], setting: Setting | None, item_id: str) -> dict[str, Any]:
    """An item's attributes plus its settings; an attribute of the same name (an op's) is refused."""
    if setting is None:
        return attrs
    clash = sorted(set(attrs) & set(setting.attrs))
    if clash:
        raise SpecError(loaded.problem(
            f"generation.{clash[0]}", f"item {item_id!r} already has the attribute {clash[0]!r} (from its record or "
                                      "an op); a swept setting cannot replace it",
            hint="rename the node parameter or record attribute, or do not sweep this setting"))
    return {**attrs, **setting.attrs}
