"""``benchc diff-runs RUN_A RUN_B``: two runs compared item by item.

The runs may be two models on one manifest, or two versions of one benchmark on one model.
Items are paired by ``item_id``; items only in one run are counted (and listed) apart, and
when the two manifests differ the paired items whose content changed are counted by cause
(``compiler/diff/items.py``), since their answers may differ for that reason alone.

What is compared per paired item (the answers of one stage, by default each run's last):

* ``correct``: the mean over the item's samples of ``runtime.answers.is_correct`` on the answer
  as ``[answer]`` reads it, with the target and ``correct`` rule of the spec's first metric that
  has a target (``word`` for paper metrics, which have their own rules): the function and rule
  ``benchc score``'s general metrics use, so ``general.accuracy`` and diff-runs agree;
  items without targets have none. Binary when ``generation.n`` is 1.
* ``agreement``: the share of the other items of the item's group (its variants: the
  consistency unit) whose normalised first answer equals this item's; groups of one item have
  none.
* each per-item value a metric writes into scores.json as ``details.per_item`` (``{item_id:
  number}`` or ``{item_id: {column: number}}``), named ``<metric>`` or ``<metric>.<column>``.

For each measure: the means, the paired difference (B - A) with a paired bootstrap confidence
interval (seeded; resampling items with replacement, vectorised in numpy), and for binary
measures McNemar's test (exact binomial on the discordant pairs when there are fewer than 25 of
them, else chi-squared with continuity correction) and the items that flipped.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from benchc.compiler.errors import Problem, RunError
from benchc.compiler.metrics import METRIC_SCHEMAS

from ..score.answers import extract, is_correct
from ..score.rules import CORRECTNESS_RULES
from ..artifacts import RunRecord

from ..run.runfolder import manifest_items, read_json, read_responses, read_run_record
from ..score.core import SCORES_FILE, run_manifest_of

NORMALISE = r"[^\p{L}\p{N}]+"
EXACT_BELOW = 25
EXAMPLE_CHARS = 120


@dataclass
class RunSide:
    label: str
    record: RunRecord
    spec: Any
    manifest: Any
    items: pl.DataFrame
    responses: pl.DataFrame
    scores: dict[str, Any] | None


def load_run(run_dir: Path, manifest_dir: Path | None = None) -> RunSide:
    """A run folder with its manifest (the recorded one, or ``manifest_dir``) and scores."""
    run_dir = Path(run_dir)
    record = read_run_record(run_dir)
    manifest, spec = run_manifest_of(run_dir, record, manifest_dir)
    scores_path = run_dir / SCORES_FILE
    scores = read_json(scores_path, "scores", f"rerun `benchc score {run_dir}`") if scores_path.is_file() else None
    return RunSide(str(run_dir), record, spec, manifest, manifest_items(manifest), read_responses(run_dir, record),
                   scores)


def _normalised(column: str) -> pl.Expr:
    return pl.col(column).fill_null("").str.to_lowercase().str.replace_all(NORMALISE, " ").str.strip_chars()


def answers_of(side: RunSide, stage: str) -> pl.DataFrame:
    """(item_id, sample, read, norm) of one stage's answers: ``read`` is the answer as the spec's
    ``[answer]`` extraction reads it (what ``benchc score`` scores), ``norm`` that normalised."""
    if stage not in {s.id for s in side.spec.stage}:
        raise RunError(Problem(f"the run has no stage {stage!r}", file=side.label,
                               hint=f"its stages: {', '.join(s.id for s in side.spec.stage)}"))
    answer = getattr(side.spec, "answer", None)
    prompts = dict(side.items.select("item_id", "prompt").iter_rows()) if "prompt" in side.items.columns else {}
    rows = side.responses.filter(pl.col("stage") == stage).select("item_id", "sample", pl.col("text").fill_null(""))
    read = [extract(text, answer, prompts.get(item) or "") for item, text in rows.select("item_id", "text").iter_rows()]
    return (rows.select("item_id", "sample", pl.Series("read", read, dtype=pl.String))
            .with_columns(_normalised("read").alias("norm")))


def correctness_rule(side: RunSide) -> tuple[str, str] | None:
    """(target, rule) of the first metric with a target: its ``correct`` (general metrics: the
    rule ``benchc score`` uses), or "word" (whole words of a normalised target) for the paper
    metrics, which read answers by their own rules; None without targets."""
    for metric in side.spec.metric:
        target = metric.params.get("target")
        if isinstance(target, str):
            schema = METRIC_SCHEMAS.get(metric.name) if metric.name in METRIC_SCHEMAS else None
            params = schema.model_validate(metric.params) if schema is not None else None
            rule = getattr(params, "correct", "word")
            return target, rule if rule in CORRECTNESS_RULES else "word"
    return None


def correctness(side: RunSide, answers: pl.DataFrame) -> pl.DataFrame:
    """(item_id, correct): mean over samples of ``is_correct`` (runtime/score/answers.py: the function
    every general metric scores with) under the first target metric's rule; items without
    targets are left out."""
    rule = correctness_rule(side)
    empty = pl.DataFrame(schema={"item_id": pl.String, "correct": pl.Float64})
    if rule is None:
        return empty
    target, how = rule
    targets = {row["item_id"]: json.loads(row["targets"]).get(target, [])
               for row in side.items.select("item_id", "targets").iter_rows(named=True)}
    prompts = (dict(side.items.select("item_id", "prompt").iter_rows()) if "prompt" in side.items.columns else {})
    rows = [(item, float(is_correct(text, targets[item], how, prompts.get(item) or "")))
            for item, text in answers.select("item_id", "read").iter_rows() if targets.get(item)]
    if not rows:
        return empty
    hits = pl.DataFrame(rows, schema={"item_id": pl.String, "hit": pl.Float64}, orient="row")
    return hits.group_by("item_id").agg(pl.col("hit").mean().alias("correct"))


def agreement(side: RunSide, answers: pl.DataFrame) -> pl.DataFrame:
    """(item_id, agreement): share of the other items of the group with the same first answer."""
    first = answers.filter(pl.col("sample") == 0).join(side.items.select("item_id", "group_id"), on="item_id")
    same = pl.len().over("group_id", "norm") - 1
    size = pl.len().over("group_id") - 1
    return (first.with_columns(agreement=pl.when(size > 0).then(same / size))
            .select("item_id", "agreement"))


def score_details(side: RunSide) -> pl.DataFrame | None:
    """Per-item values metrics wrote into scores.json (``details.per_item``), one column each."""
    frames = []
    for metric in (side.scores or {}).get("metrics", []):
        per_item = (metric.get("details") or {}).get("per_item")
        if not isinstance(per_item, dict) or not per_item:
            continue
        rows = [{"item_id": k, **({f"{metric['name']}.{c}": v for c, v in value.items()}
                                  if isinstance(value, dict) else {metric["name"]: value})}
                for k, value in per_item.items()]
        frame = pl.DataFrame(rows, infer_schema_length=None)
        numeric = [c for c, t in frame.schema.items() if c != "item_id" and (t.is_numeric() or t == pl.Boolean)]
        frames.append(frame.select("item_id", *(pl.col(c).cast(pl.Float64) for c in numeric)))
    if not frames:
        return None
    out = frames[0]
    for frame in frames[1:]:
        out = out.join(frame, on="item_id", how="full", coalesce=True)
    return out


def item_values(side: RunSide, stage: str) -> pl.DataFrame:
    """item_id plus one Float64 column per measure (null where an item has none)."""
    answers = answers_of(side, stage)
    first = answers.filter(pl.col("sample") == 0).select("item_id", pl.col("norm").alias("answer"))
    out = side.items.select("item_id").join(first, on="item_id", how="left")
    for frame in (correctness(side, answers), agreement(side, answers), score_details(side)):
        if frame is not None and frame.width > 1:
            out = out.join(frame, on="item_id", how="left")
    return out


def paired_bootstrap(diffs: np.ndarray, resamples: int, seed: int, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the mean paired difference, resampling items with replacement.
    A mean of a resample depends only on how often each distinct value is drawn, so few
    distinct values (binary measures) draw multinomial counts (exact, and O(resamples x values));
    otherwise indices are drawn in chunks of about 4M."""
    n = len(diffs)
    if n == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    values, counts = np.unique(diffs, return_counts=True)
    if len(values) <= 256:
        means = rng.multinomial(n, counts / n, size=resamples) @ values / n
    else:
        means = np.empty(resamples)
        step = max(1, 4_000_000 // n)
        for start in range(0, resamples, step):
            stop = min(resamples, start + step)
            means[start:stop] = diffs[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def mcnemar(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """McNemar's test of paired binary outcomes: exact (binomial, two-sided) below
    ``EXACT_BELOW`` discordant pairs, else chi-squared with continuity correction."""
    from scipy.stats import binomtest, chi2

    lost, gained = int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))
    discordant = lost + gained
    if discordant == 0:
        return {"a_only": lost, "b_only": gained, "method": "no discordant pairs", "statistic": None, "p": 1.0}
    if discordant < EXACT_BELOW:
        p = binomtest(min(lost, gained), discordant, 0.5).pvalue
        return {"a_only": lost, "b_only": gained, "method": "exact binomial", "statistic": None, "p": float(p)}
    statistic = (abs(lost - gained) - 1) ** 2 / discordant
    return {"a_only": lost, "b_only": gained, "method": "chi-squared, continuity-corrected",
            "statistic": float(statistic), "p": float(chi2.sf(statistic, 1))}


@dataclass
class MeasureDiff:
    name: str
    n: int
    mean_a: float
    mean_b: float
    diff: float
    ci: tuple[float, float]
    binary: bool
    mcnemar: dict[str, Any] | None = None
    flipped: dict[str, list[str]] = field(default_factory=dict)  # "gained"/"lost" -> item ids (examples)

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "n": self.n, "mean_a": self.mean_a, "mean_b": self.mean_b, "diff": self.diff,
                "ci": list(self.ci), "binary": self.binary, "mcnemar": self.mcnemar, "flipped": self.flipped}


@dataclass
class RunsDiff:
    a: dict[str, Any]
    b: dict[str, Any]
    stage: tuple[str, str]
    paired: int
    only_a: int
    only_b: int
    answers_changed: int
    measures: list[MeasureDiff]
    examples: dict[str, list[Any]]
    resamples: int
    seed: int
    content: dict[str, Any] | None = None  # paired items whose manifest row changed (two versions)

    @property
    def rules(self) -> str | None:
        return _rules_note(self.a, self.b)

    def as_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "stage": list(self.stage), "paired": self.paired, "only_a": self.only_a,
                "only_b": self.only_b, "answers_changed": self.answers_changed,
                "measures": [m.as_json() for m in self.measures], "examples": self.examples,
                "bootstrap": {"resamples": self.resamples, "seed": self.seed, "level": 0.95},
                "content_changed": self.content, "rules_changed": self.rules}


def _measure(name: str, paired: pl.DataFrame, resamples: int, seed: int, examples: int) -> MeasureDiff | None:
    both = paired.select("item_id", pl.col(f"{name}_a").alias("a"), pl.col(f"{name}_b").alias("b")).drop_nulls()
    if not both.height:
        return None
    a, b = both["a"].to_numpy(), both["b"].to_numpy()
    diffs = b - a
    binary = bool(np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all())
    result = MeasureDiff(name, both.height, float(a.mean()), float(b.mean()), float(diffs.mean()),
                         paired_bootstrap(diffs, resamples, seed), binary)
    if binary:
        result.mcnemar = mcnemar(a, b)
        result.flipped = {
            "gained": both.filter((pl.col("a") == 0) & (pl.col("b") == 1))["item_id"].head(examples).to_list(),
            "lost": both.filter((pl.col("a") == 1) & (pl.col("b") == 0))["item_id"].head(examples).to_list()}
    return result


def _side_json(side: RunSide, stage: str) -> dict[str, Any]:
    bench = side.record.benchmark
    return {"label": side.label, "model": side.record.model, "benchmark": None if bench is None else bench.to_json(),
            "manifest_digest": side.record.manifest_digest, "stage": stage, "items": side.items.height,
            "rules": None if side.scores is None else side.scores.get("rules") or 1}


def _rules_note(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """Both runs scored (scores.json) under different scoring-rules versions: the per-item
    metric values read from those files moved with benchc, not only with the model."""
    if a["rules"] is None or b["rules"] is None or a["rules"] == b["rules"]:
        return None
    return (f"the runs were scored under different scoring-rules versions (A {a['rules']}, B {b['rules']}): "
            "the metric values read from their scores.json may differ because benchc's rules changed "
            "(CHANGELOG.md), not the model; `benchc score` both runs to compare under one version")


def _short(text: Any) -> Any:
    return text[:EXAMPLE_CHARS] + "..." if isinstance(text, str) and len(text) > EXAMPLE_CHARS else text


def _content_changes(a: RunSide, b: RunSide) -> dict[str, Any] | None:
    """For runs of two manifests: the paired items whose manifest row changed, by cause."""
    if a.record.manifest_digest == b.record.manifest_digest:
        return None
    from benchc.compiler.diff import lock_changes, signals_of, spec_changes
    from benchc.compiler.diff.items import item_diff

    spec = spec_changes(a.manifest.spec, b.manifest.spec)
    signals = signals_of(spec, lock_changes(a.manifest.lock, b.manifest.lock), (a.manifest.spec, b.manifest.spec))
    items = item_diff(a.items, b.items, signals, examples=0)
    return {"changed": items.changed, "causes": items.causes,
            "spec": [c.as_json() for c in spec if not c.path.startswith("benchmark.description")]}


def pair_items(values_a: pl.DataFrame, values_b: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series, pl.Series]:
    """(paired rows with ``<column>_a``/``<column>_b``, ids only in A, ids only in B), by item id."""
    joined = (values_a.rename({c: f"{c}_a" for c in values_a.columns if c != "item_id"}).with_columns(in_a=True)
              .join(values_b.rename({c: f"{c}_b" for c in values_b.columns if c != "item_id"}).with_columns(in_b=True),
                    on="item_id", how="full", coalesce=True))
    in_a, in_b = pl.col("in_a").fill_null(False), pl.col("in_b").fill_null(False)
    return (joined.filter(in_a & in_b).sort("item_id"), joined.filter(in_a & ~in_b).sort("item_id")["item_id"],
            joined.filter(in_b & ~in_a).sort("item_id")["item_id"])


def diff_runs(run_a: Path, run_b: Path, *, stage: str | None = None, resamples: int = 10_000, seed: int = 0,
              examples: int = 5, manifest_a: Path | None = None, manifest_b: Path | None = None) -> RunsDiff:
    """Run B against run A, item by item (see the module docstring for what is compared)."""
    a, b = load_run(run_a, manifest_a), load_run(run_b, manifest_b)
    stages = (stage or a.spec.stage[-1].id, stage or b.spec.stage[-1].id)
    values_a, values_b = item_values(a, stages[0]), item_values(b, stages[1])
    paired, only_a, only_b = pair_items(values_a, values_b)
    changed = paired.filter(pl.col("answer_a").ne_missing(pl.col("answer_b")))
    names = [c for c in values_a.columns if c not in ("item_id", "answer") and c in values_b.columns]
    measures = [m for m in (_measure(n, paired, resamples, seed, examples) for n in names) if m is not None]
    shown = [{"item_id": r["item_id"], "a": _short(r["answer_a"]), "b": _short(r["answer_b"])}
             for r in changed.head(examples).iter_rows(named=True)]
    return RunsDiff(_side_json(a, stages[0]), _side_json(b, stages[1]), stages, paired.height, only_a.len(),
                    only_b.len(), changed.height, measures,
                    {"answers_changed": shown, "only_a": only_a.head(examples).to_list(),
                     "only_b": only_b.head(examples).to_list()}, resamples, seed, _content_changes(a, b))


# output ------------------------------------------------------------------------------------

def _fmt(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:+.4f}"


def _p(value: float) -> str:
    return f"{value:.3g}"


def _measure_line(m: MeasureDiff) -> str:
    line = (f"{m.name}: A {m.mean_a:.4f}, B {m.mean_b:.4f}, B-A {_fmt(m.diff)} "
            f"[95% CI {_fmt(m.ci[0])}, {_fmt(m.ci[1])}] over {m.n} paired items")
    if m.mcnemar:
        t = m.mcnemar
        line += (f"; flipped: {t['b_only']} gained (0->1), {t['a_only']} lost (1->0); McNemar ({t['method']}) "
                 f"p={_p(t['p'])}")
    return line


def _side_line(which: str, side: dict[str, Any]) -> str:
    bench = side.get("benchmark") or {}
    return (f"{which}: {side['label']} (model {side.get('model')}, {bench.get('name')} {bench.get('version')}, "
            f"{side['items']} items, stage {side['stage']})")


def render_runs(diff: RunsDiff, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(diff.as_json(), indent=2, sort_keys=True, ensure_ascii=False)
    md = fmt == "markdown"
    bullet = "- " if md else "  "
    side = "- " if md else ""
    out = (["# benchc diff-runs", ""] if md else []) + [
        f"{side}{_side_line('A', diff.a)}", f"{side}{_side_line('B', diff.b)}", "",
        (f"{diff.paired} paired items, {diff.only_a} only in A, {diff.only_b} only in B; "
         f"{diff.answers_changed} paired answers differ (normalised)")]
    if diff.content:
        causes = ", ".join(f"{k} {v}" for k, v in diff.content["causes"].items())
        out.append(f"{diff.content['changed']} paired items changed content between the manifests"
                   + (f" ({causes})" if causes else ""))
    if diff.rules:
        out.append(f"note: {diff.rules}")
    out += ["", "## Measures" if md else "measures (paired bootstrap, "
            f"{diff.resamples} resamples, seed {diff.seed}):"]
    out += [f"{bullet}{_measure_line(m)}" for m in diff.measures] or [f"{bullet}none in common"]
    for m in diff.measures:
        for kind in ("gained", "lost"):
            if m.flipped.get(kind):
                out.append(f"{bullet}{m.name} {kind}: {', '.join(m.flipped[kind])}")
    if diff.examples["answers_changed"]:
        out += ["", "## Answers that differ" if md else "answers that differ:"]
        out += [f"{bullet}{e['item_id']}: {json.dumps(e['a'])} -> {json.dumps(e['b'])}"
                for e in diff.examples["answers_changed"]]
    for key, label in (("only_a", "only in A"), ("only_b", "only in B")):
        if diff.examples[key]:
            out.append(f"{side}{label}: {', '.join(diff.examples[key])}")
    return "\n".join(out) + "\n"
