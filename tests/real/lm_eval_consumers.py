"""Reads a `benchc score --format lm-eval` folder with lm-eval's own consumers, under an lm-eval
0.4.13 interpreter (not benchc's): prints one JSON object with what each consumer made of it.

    LMEVAL_PYTHON tests/real/lm_eval_consumers.py RUN/lm-eval [--wandb-dir DIR]

* ``make_table`` (``lm_eval.utils``) on ``results`` and on ``groups``: the Markdown tables;
* the Zeno upload script's discovery and frames (``scripts/zeno_visualize.py`` of lm-eval's
  repository, which the wheel does not ship: its functions are restated here from lm-eval's
  ``lm_eval.utils`` helpers, step for step; only the upload to Zeno's servers is left out);
* ``WandbLogger`` (``lm_eval.loggers``) in offline mode, when wandb is installed: ``post_init``,
  ``log_eval_result`` and ``log_eval_samples`` with the samples read back from the files in
  the in-memory shape lm-eval passes it (``arguments`` as a list of argument tuples).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from lm_eval.utils import (
    get_file_task_name,
    get_latest_filename,
    get_results_filenames,
    get_sample_results_filenames,
    make_table,
    sanitize_model_name,
)


def model_dirs(root: Path) -> list[Path]:
    """The Zeno script's ``discover_model_dirs``: folders holding a ``results_*.json``."""
    candidates = [root] + sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: p.as_posix())
    return [p for p in candidates if get_results_filenames([f.as_posix() for f in p.iterdir() if f.is_file()])]


def latest_results(folder: Path) -> str:
    return get_latest_filename(get_results_filenames([f.as_posix() for f in folder.iterdir() if f.is_file()]))


def latest_samples(folder: Path, task: str) -> str:
    files = [f for f in get_sample_results_filenames([f.as_posix() for f in folder.iterdir() if f.is_file()])
             if get_file_task_name(Path(f).name) == task]
    return get_latest_filename(files)


def zeno_frames(folder: Path) -> dict[str, Any]:
    """The Zeno script's per-task dataset and system frames (``generate_dataset``,
    ``generate_system_df`` for ``generate_until``), as row counts and column names."""
    import pandas as pd

    results = json.loads(Path(latest_results(folder)).read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for task, config in results["configs"].items():
        lines = Path(latest_samples(folder, task)).read_text(encoding="utf-8").splitlines()
        data = [json.loads(line) for line in lines]
        ids = ([x["doc_id"] for x in data] if not config.get("filter_list")
               else [f"{x['doc_id']}.{x['filter']}" for x in data])
        instance = [x["arguments"]["gen_args_0"]["arg_0"] for x in data]
        dataset = pd.DataFrame({"id": ids, "doc_id": [x["doc_id"] for x in data], "data": instance,
                                "input_len": [len(x) for x in instance], "labels": [x["target"] for x in data],
                                "output_type": config["output_type"]})
        system: dict[str, Any] = {"id": ids, "doc_id": [x["doc_id"] for x in data],
                                  "output": [str(x["filtered_resps"][0]) for x in data]}
        if config.get("filter_list"):
            system["filter"] = [x["filter"] for x in data]
        system.update({m["metric"]: [x[m["metric"]] for x in data] for m in config["metric_list"]})
        frame = pd.DataFrame(system)
        zeno_metrics = [m["metric"] for m in config["metric_list"] if m.get("aggregation") == "mean"]
        out[task] = {"rows": len(dataset), "system_columns": list(frame.columns), "zeno_metrics": zeno_metrics,
                     "means": {m: (None if frame[m].isna().all() else float(frame[m].mean())) for m in zeno_metrics},
                     "model_args": sanitize_model_name(json.dumps(results["config"]["model_args"]))}
    return out


def in_memory(sample: dict[str, Any]) -> dict[str, Any]:
    """A saved sample in the shape lm-eval hands its loggers (``arguments`` as argument tuples)."""
    arguments = [tuple(args[f"arg_{k}"] for k in range(len(args))) for args in sample["arguments"].values()]
    return {**sample, "arguments": arguments}


def wandb_log(folder: Path, wandb_dir: Path) -> dict[str, Any]:
    try:
        import wandb  # noqa: F401
    except ImportError:
        return {"skipped": "wandb is not installed"}
    from lm_eval.loggers import WandbLogger

    os.environ.update(WANDB_MODE="offline", WANDB_DIR=str(wandb_dir), WANDB_SILENT="true")
    results = json.loads(Path(latest_results(folder)).read_text(encoding="utf-8"))
    samples = {task: [in_memory(json.loads(line))
                      for line in Path(latest_samples(folder, task)).read_text(encoding="utf-8").splitlines()]
               for task in results["configs"]}
    logger = WandbLogger(init_args={"project": "benchc-export", "dir": str(wandb_dir)})
    logger.post_init(results)
    logger.log_eval_result()
    logger.log_eval_samples(samples)
    logged = dict(logger.wandb_results)
    logger.run.finish()
    return {"logged": {k: v for k, v in sorted(logged.items()) if isinstance(v, (int, float))}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--wandb-dir", type=Path)
    args = parser.parse_args()
    folders = model_dirs(args.root)
    results = json.loads(Path(latest_results(folders[0])).read_text(encoding="utf-8"))
    report = {"model_dirs": [p.relative_to(args.root).as_posix() for p in folders],
              "table": make_table(results), "groups_table": make_table(results, "groups"),
              "zeno": zeno_frames(folders[0])}
    if args.wandb_dir is not None:
        report["wandb"] = wandb_log(folders[0], args.wandb_dir)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
