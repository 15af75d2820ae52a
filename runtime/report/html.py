"""The HTML report: tables, figures and an item browser, in one folder with no network resource.

``index.html`` holds the tables (rendered by Jinja with autoescape on), links the figures under
``plots/`` and carries the item browser's data as JSON (Jinja's ``tojson``, which escapes
``<``, ``>``, ``&`` and quotes, so no text can close the script element). A small inline script
builds the browser from that data with ``textContent`` only, never ``innerHTML``: a prompt or a
response is always shown as text. Each group's images (from the compile cache) and audio (the
cache's audio items, and spoken answers from the response store's blobs) are copied under
``media/``, named by their sha256. After the page loads, the script writes into
``#media-check`` how many images and audio clips loaded, so a headless browser can check them.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from benchc.compiler.errors import Problem, RunError

from ..artifacts import RunRecord
from ..run.runfolder import read_responses
from .tables import Table, format_cell

_EXTENSIONS = ((b"\x89PNG", ".png"), (b"\xff\xd8\xff", ".jpg"), (b"GIF8", ".gif"), (b"RIFF", ".wav"),
               (b"ID3", ".mp3"), (b"fLaC", ".flac"), (b"OggS", ".ogg"))


def media_extension(head: bytes, kind: str) -> str:
    for magic, ext in _EXTENSIONS:
        if head.startswith(magic):
            if ext == ".wav" and head[8:12] == b"WEBP":
                return ".webp"
            return ext
    return ".png" if kind == "image" else ".wav" if kind == "audio" else ".bin"


@dataclass
class MediaCopier:
    """Copies media by sha256 from the compile cache or the store's blobs into ``out/media``."""

    out: Path
    cache_dir: Path
    store_dir: Path
    missing: list[str] = field(default_factory=list)
    copied: dict[str, str] = field(default_factory=dict)

    def copy(self, sha: str, kind: str, blob: bool = False) -> str | None:
        if sha in self.copied:
            return self.copied[sha]
        roots = [self.store_dir / "blobs", self.cache_dir] if blob else [self.cache_dir, self.store_dir / "blobs"]
        for root in roots:
            path = root / "objects" / sha[:2] / sha[2:]  # ContentStore's layout (opening one would create it)
            if path.is_file():
                with path.open("rb") as fh:
                    head = fh.read(16)
                name = f"media/{sha}{media_extension(head, kind)}"
                (self.out / "media").mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, self.out / name)
                self.copied[sha] = name
                return name
        self.missing.append(sha)
        return None


def browser_data(items: pl.DataFrame, responses: pl.DataFrame, stage_order: list[str],
                 scores: dict[str, list[dict[str, Any]]], copier: MediaCopier, max_groups: int) -> dict[str, Any]:
    """The item browser's data: up to ``max_groups`` groups (in manifest order), each with its
    items (attributes, prompt, media, targets, responses) and its own scores."""
    order = list(dict.fromkeys(items["group_id"].to_list()))
    shown = order[:max_groups]
    wanted = set(shown)
    shown_items = set(items.filter(pl.col("group_id").is_in(shown))["item_id"].to_list())
    answers: dict[str, list[dict[str, Any]]] = {}
    rank = {s: i for i, s in enumerate(stage_order)}
    mine = responses.filter(pl.col("item_id").is_in(sorted(shown_items)))
    for row in sorted(mine.iter_rows(named=True), key=lambda r: (rank.get(r["stage"], 99), r["sample"])):
        audio = copier.copy(row["blob"], "audio", blob=True) if row.get("blob") else None
        answers.setdefault(row["item_id"], []).append(
            {"stage": row["stage"], "sample": row["sample"], "text": row.get("text"), "audio": audio,
             "missing": bool(row.get("blob")) and audio is None})
    by_group: dict[str, list[dict[str, Any]]] = {g: [] for g in shown}
    for row in items.iter_rows(named=True):
        if row["group_id"] not in wanted:
            continue
        media = []
        for ref in json.loads(row["media"] or "[]"):
            src = copier.copy(ref["sha256"], ref["kind"])
            media.append({"name": ref.get("name", ""), "kind": ref["kind"], "src": src, "sha256": ref["sha256"]})
        by_group[row["group_id"]].append({
            "id": row["item_id"], "attrs": json.loads(row["attrs"] or "{}"), "prompt": row.get("prompt"),
            "system": row.get("system"), "text": row.get("text"), "media": media,
            "targets": json.loads(row["targets"] or "{}"), "responses": answers.get(row["item_id"], [])})
    groups = [{"id": g, "items": by_group[g], "scores": [_score_block(s) for s in scores.get(g, [])]} for g in shown]
    return {"groups": groups, "total_groups": len(order), "shown_groups": len(shown)}


def _score_block(metric: dict[str, Any]) -> dict[str, Any]:
    columns = metric["columns"]
    return {"name": metric["name"], "columns": columns,
            "rows": [[format_cell(row.get(c), 2) for c in columns] for row in metric["rows"]]}


def load_run_items(run_dir: Path, record: RunRecord, manifest: Any) -> tuple[pl.DataFrame, pl.DataFrame]:
    from ..run.runfolder import manifest_items

    return manifest_items(manifest), read_responses(run_dir, record)


def check_media(copier: MediaCopier) -> None:
    if copier.missing:
        shown = ", ".join(s[:16] for s in copier.missing[:3])
        raise RunError(Problem(f"{len(copier.missing)} media file(s) of the report are in neither the compile cache "
                               f"nor the response store (e.g. {shown})", file=str(copier.cache_dir),
                               hint="pass the --cache and --store the run used"))


# the page ------------------------------------------------------------------------------------

@dataclass
class Section:
    """A metric (or a breakdown) on the page: its tables and figures."""

    title: str
    tables: list[Table]
    figures: list[tuple[str, str]]  # (src, caption)
    notes: list[str] = field(default_factory=list)


def html_table(table: Table) -> dict[str, Any]:
    columns = table.columns
    numeric = [table.numeric(i) for i in range(len(columns))]
    return {"title": table.title, "columns": columns, "groups": table.groups, "stub": table.stub,
            "numeric": numeric, "footer": table.footer,
            "rows": [[format_cell(row[i] if i < len(row) else None, table.digits) for i in range(len(columns))]
                     for row in table.rows]}


def render_page(title: str, summary: list[tuple[str, str]], sections: list[Section],
                browser: dict[str, Any] | None, browser_note: str | None, footer: list[str]) -> str:
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    template = env.from_string(PAGE)
    return template.render(title=title, summary=summary, footer=footer, browser=browser, browser_note=browser_note,
                           sections=[{"title": s.title, "notes": s.notes, "figures": s.figures,
                                      "tables": [html_table(t) for t in s.tables]} for s in sections])


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self' file: data:; media-src 'self' file:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 1em 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .6em 0; font-size: 13px; }
th, td { padding: .2em .6em; border-bottom: 1px solid #e4e4e4; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
th.group { text-align: center; border-bottom: 1px solid #999; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
.note { color: #555; font-size: 12px; border-left: 3px solid #ddd; padding-left: .6em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
.prov { color: #666; font: 11px/1.4 ui-monospace, monospace; }
#browser { display: grid; grid-template-columns: 18em 1fr; gap: 1em; }
#group-list { list-style: none; padding: 0; margin: 0; max-height: 70vh; overflow: auto; font-size: 12px; }
#group-list li { padding: .15em .3em; cursor: pointer; word-break: break-all; }
#group-list li.active { background: #e8f0fe; }
.items { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: .8em; }
.item { border: 1px solid #ddd; border-radius: 4px; padding: .5em; font-size: 12.5px; }
.item img { max-width: 100%; display: block; margin: .3em 0; image-rendering: auto; }
.item audio { width: 100%; margin: .2em 0; }
.attr { display: inline-block; background: #f1f3f4; border-radius: 3px; padding: 0 .35em; margin: 0 .2em .2em 0; }
.text { white-space: pre-wrap; word-break: break-word; }
.item-id { font-weight: 600; word-break: break-all; }
.label { color: #666; font-size: 11px; text-transform: uppercase; letter-spacing: .03em; }
.missing { color: #b00; }
</style>
</head>
<body>
<h1>{{ title }}</h1>
<table class="summary">
{% for key, value in summary %}<tr><th>{{ key }}</th><td>{{ value }}</td></tr>
{% endfor %}</table>
{% for section in sections %}
<h2>{{ section.title }}</h2>
{% for table in section.tables %}
<table>
<caption>{{ table.title }}</caption>
<thead>
{% if table.groups %}<tr>{% for _ in range(table.stub) %}<th></th>{% endfor %}{% for label, span in table.groups %}<th class="group" colspan="{{ span }}">{{ label }}</th>{% endfor %}</tr>{% endif %}
<tr>{% for column in table.columns %}<th{% if table.numeric[loop.index0] %} class="num"{% endif %}>{{ column }}</th>{% endfor %}</tr>
</thead>
<tbody>
{% for row in table.rows %}<tr>{% for cell in row %}<td{% if table.numeric[loop.index0] %} class="num"{% endif %}>{{ cell }}</td>{% endfor %}</tr>
{% endfor %}</tbody>
</table>
{% endfor %}
{% for note in section.notes %}<p class="note">{{ note }}</p>
{% endfor %}
{% for src, caption in section.figures %}<figure><img src="{{ src }}" alt="{{ caption }}"><figcaption class="label">{{ caption }}</figcaption></figure>
{% endfor %}
{% endfor %}
<h2 id="items">Items</h2>
{% if browser_note %}<p class="note" id="browser-note">{{ browser_note }}</p>
{% endif %}
{% if browser %}
<p>{{ browser.shown_groups }} of {{ browser.total_groups }} groups{% if browser.shown_groups < browser.total_groups %} (the first ones; see --max-groups){% endif %}.
<input id="group-filter" type="search" placeholder="filter groups by id, prompt or response" size="40"></p>
<div id="browser"><ol id="group-list"></ol><div id="group-view"></div></div>
<p id="media-check" class="prov" data-state="pending">media: checking…</p>
<script type="application/json" id="browser-data">{{ browser|tojson }}</script>
<script>
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("browser-data").textContent);
  var list = document.getElementById("group-list"), view = document.getElementById("group-view");
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function scoreTable(block) {
    var table = el("table", "scores"), head = el("tr"), body = el("tbody");
    table.appendChild(el("caption", null, block.name));
    block.columns.forEach(function (c) { head.appendChild(el("th", null, c)); });
    var thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
    block.rows.forEach(function (r) {
      var tr = el("tr");
      r.forEach(function (c) { tr.appendChild(el("td", /^-?[0-9.]+$/.test(c) ? "num" : null, c)); });
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }
  function itemCard(item) {
    var card = el("div", "item");
    card.setAttribute("data-item", item.id);
    card.appendChild(el("div", "item-id", item.id));
    var attrs = el("div");
    Object.keys(item.attrs).sort().forEach(function (k) {
      attrs.appendChild(el("span", "attr", k + " = " + JSON.stringify(item.attrs[k])));
    });
    card.appendChild(attrs);
    item.media.forEach(function (m) {
      if (!m.src) { card.appendChild(el("div", "missing", m.kind + " " + m.sha256.slice(0, 12) + " not found")); return; }
      var node;
      if (m.kind === "image") { node = el("img"); node.alt = m.name; }
      else { node = el("audio"); node.controls = true; node.preload = "metadata"; }
      node.src = m.src;
      card.appendChild(node);
    });
    if (item.system) { card.appendChild(el("div", "label", "system")); card.appendChild(el("div", "text system", item.system)); }
    card.appendChild(el("div", "label", "prompt"));
    card.appendChild(el("div", "text prompt", item.prompt));
    if (item.text !== null && item.text !== item.prompt) {
      card.appendChild(el("div", "label", "text")); card.appendChild(el("div", "text", item.text));
    }
    Object.keys(item.targets).sort().forEach(function (k) {
      card.appendChild(el("div", "label", "target " + k));
      card.appendChild(el("div", "text target", item.targets[k].join(" | ")));
    });
    item.responses.forEach(function (r) {
      card.appendChild(el("div", "label", r.stage + " #" + r.sample));
      if (r.audio) { var a = el("audio"); a.controls = true; a.preload = "metadata"; a.src = r.audio; card.appendChild(a); }
      else if (r.missing) { card.appendChild(el("div", "missing", "audio not found")); }
      if (r.text !== null) card.appendChild(el("div", "text response", r.text));
    });
    return card;
  }
  var sections = [], entries = [];
  function show(index) {
    sections.forEach(function (s, i) { s.hidden = i !== index; });
    entries.forEach(function (e, i) { e.className = i === index ? "active" : ""; });
  }
  data.groups.forEach(function (group, index) {
    var section = el("section", "group");
    section.setAttribute("data-group", group.id);
    section.appendChild(el("h3", null, group.id));
    group.scores.forEach(function (block) { section.appendChild(scoreTable(block)); });
    var grid = el("div", "items");
    group.items.forEach(function (item) { grid.appendChild(itemCard(item)); });
    section.appendChild(grid);
    view.appendChild(section);
    sections.push(section);
    var entry = el("li", null, group.id);
    entry.addEventListener("click", function () { show(index); });
    list.appendChild(entry);
    entries.push(entry);
  });
  if (sections.length) show(0);
  var haystacks = data.groups.map(function (g) { return JSON.stringify(g).toLowerCase(); });
  document.getElementById("group-filter").addEventListener("input", function (event) {
    var needle = event.target.value.toLowerCase();
    entries.forEach(function (e, i) { e.hidden = needle !== "" && haystacks[i].indexOf(needle) < 0; });
  });
  var check = document.getElementById("media-check");
  function report() {
    var images = view.querySelectorAll("img"), audio = view.querySelectorAll("audio");
    var okImages = 0, okAudio = 0, failedAudio = 0;
    images.forEach(function (i) { if (i.complete && i.naturalWidth > 0) okImages++; });
    audio.forEach(function (a) { if (a.readyState >= 1 && a.duration > 0) okAudio++; else if (a.error) failedAudio++; });
    check.setAttribute("data-images", images.length);
    check.setAttribute("data-images-loaded", okImages);
    check.setAttribute("data-audio", audio.length);
    check.setAttribute("data-audio-loaded", okAudio);
    check.setAttribute("data-audio-failed", failedAudio);
    var done = okAudio + failedAudio === audio.length;
    check.setAttribute("data-state", done ? "done" : "loading");
    check.textContent = "media: " + okImages + "/" + images.length + " images and " + okAudio + "/" + audio.length + " audio clips loaded";
  }
  view.querySelectorAll("audio").forEach(function (a) {
    a.addEventListener("loadedmetadata", report);
    a.addEventListener("error", report);
  });
  window.addEventListener("load", report);
})();
</script>
{% endif %}
<footer class="prov">
{% for line in footer %}<div>{{ line }}</div>
{% endfor %}</footer>
</body>
</html>
"""  # noqa: E501  (the page's markup, CSS and script keep their long lines)
