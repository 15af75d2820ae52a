"""Sweeps over a run's settings (``[generation]``): each grid point of the swept keys makes every
item once more, as an item of its own whose attributes hold its settings.

``[generation] temperature = { grid = [0.2, 0.7, 1.0] }`` makes three items of each variant:
``r1#rotated[angle=90]/generation[temperature=0.2]`` and so on, each with the attribute
``temperature``, so a metric's ``by = ["temperature"]`` gives a row per setting and the runtime
asks each item with its own settings (``Generation.for_item``). A ``choice`` draws one value per
item from the seed derived from the item's path, as a node's choice does; it adds no item and
no id segment. Without sweeps nothing here changes an item (ids, attributes, digests).

Templates are swept by name (``[prompt] template = { grid = { terse = "...", full = "..." } }``,
or a list, named by index): each name is a setting like a generation value, its attribute
``template`` (``system`` for ``[prompt] system``, ``<stage id>.template`` for a ``[[stage]]``'s)
holds the name, and its id segment is ``prompt[template=terse]``, before any ``generation[...]``.
The compile renders each item's prompt with its own template; a run renders a stage's with its.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import SpecError
from .seeds import derive_seed
from .spec.models import Spec
from .spec.parse import LoadedSpec
from .sweep import Sweep, is_sweep, named_values
from .variant_paths import variant_segment

SEGMENT = "generation"
"""The id path segment of a setting: ``generation[temperature=0.7]``."""
TEMPLATE_SEGMENT = "prompt"
"""The id path segment of swept templates' names: ``prompt[template=terse]``."""
PROMPT_TEMPLATES = ("template", "system")


def written_templates(spec: Spec) -> dict[str, tuple[str, Any]]:
    """Every template of the spec as written (a source or a sweep), by its attribute name
    (``template``, ``system``, ``<stage id>.template``), with its key path."""
    out = {name: (f"prompt.{name}", getattr(spec.prompt, name)) for name in PROMPT_TEMPLATES
           if getattr(spec.prompt, name) is not None}
    out |= {f"{stage.id}.template": (f"stage[{index}].template", stage.template)
            for index, stage in enumerate(spec.stage) if stage.template is not None}
    return out


def swept_templates(spec: Spec) -> dict[str, tuple[str, Any]]:
    """The templates written as a table (a sweep, or a malformed one), by attribute name."""
    return {name: found for name, found in written_templates(spec).items() if isinstance(found[1], dict)}


def template_sources(key: str, value: Any) -> list[tuple[Any, str, str]]:
    """(name, key path, source) of each template a key holds: one, named None, for a plain
    template; each name's for a sweep (``prompt.template.grid.terse``, ``....grid[0]``); none
    for a malformed sweep (reported by ``split_sweep``) or a value that is not a string."""
    if isinstance(value, str):
        return [(None, key, value)]
    table = named_values(value) if is_sweep(value) else None
    if table is None:
        return []
    return [(name, template_key(key, value, name), source) for name, source in table.items() if isinstance(source, str)]


def template_key(key: str, sweep: dict[str, Any], name: Any) -> str:
    """The key path of one swept template: ``prompt.template.grid.terse``, ``....grid[0]``."""
    kind = next(iter(sweep))
    return f"{key}.{kind}[{name}]" if isinstance(name, int) else f"{key}.{kind}.{name}"


def prompt_sources(spec: Spec) -> list[tuple[Any, str, str]]:
    """(name, key path, source) of every ``[prompt]`` template, each swept one's names included."""
    return [found for name, (key, value) in written_templates(spec).items()
            if name in PROMPT_TEMPLATES for found in template_sources(key, value)]


def spec_key(spec: Spec, name: str) -> str:
    """The spec key path of a setting's attribute name."""
    return swept_templates(spec).get(name, (f"generation.{name}", None))[0]


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
        segment = _segment(point, frozenset(sweep.named))
        setting = Setting(segment, dict(point))
        chosen = sweep.draw(derive_seed(spec_seed, record_id, f"{setting.path(variant_path)}#{SEGMENT}"))
        out.append(Setting(segment, {**point, **chosen}))
    return out


def _segment(point: dict[str, Any], templates: frozenset[str]) -> str | None:
    """``prompt[template=terse]/generation[temperature=0.7]``: the swept templates' names, then
    the generation values; None when the point is empty (only choices are swept)."""
    named = {k: v for k, v in point.items() if k in templates}
    values = {k: v for k, v in point.items() if k not in templates}
    parts = [variant_segment(name, part, None) for name, part in ((TEMPLATE_SEGMENT, named), (SEGMENT, values))
             if part]
    return "/".join(parts) or None


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
            spec_key(loaded.spec, clash[0]),
            f"item {item_id!r} already has the attribute {clash[0]!r} (from its record or an op); a swept setting "
            "cannot replace it",
            hint="rename the node parameter or record attribute, or do not sweep this setting"))
    return {**attrs, **setting.attrs}
