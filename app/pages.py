"""Files behind the Lessons and Paper figures sections: lessons/*.md with front matter, assets/*."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml   # PyYAML ships with Bokeh

ROOT = Path(__file__).resolve().parents[1]
LESSONS_DIR = ROOT / "lessons"
ASSETS_DIR = ROOT / "assets"
IMAGE_EXT = {".png", ".jpg", ".jpeg", ".gif", ".svg"}
TABLE_EXT = {".csv", ".md"}
MAX_FILE_BYTES = 2_000_000


@dataclass
class Lesson:
    slug: str
    title: str
    demo: object       # a demo preset name, a lab query, or a mapping (potential, sampler, params, ...)
    body: str
    meta: dict


def parse_front_matter(text: str) -> tuple[dict, str]:
    """`---\\nkey: value\\n---\\nbody` -> ({key: value}, body); no front matter -> ({}, text)."""
    m = re.match(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", text, re.S)
    if not m:
        return {}, text
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        meta = None
    if not isinstance(meta, dict):
        meta = {}
        for line in m.group(1).splitlines():
            if ":" in line and not line.lstrip().startswith("#"):
                k, v = line.split(":", 1)
                meta[k.strip()] = v.strip().strip("'\"")
    return {str(k).lower(): v for k, v in meta.items()}, text[m.end():]


def list_lessons(folder: Path = LESSONS_DIR) -> list[Lesson]:
    out = []
    for path in sorted(Path(folder).glob("*.md")):
        if path.stat().st_size > MAX_FILE_BYTES:
            continue
        meta, body = parse_front_matter(path.read_text(encoding="utf-8", errors="replace"))
        title = str(meta.get("title") or "") or next((ln.lstrip("# ").strip() for ln in body.splitlines() if ln.startswith("#")),
                                          path.stem.replace("-", " ").replace("_", " "))
        out.append(Lesson(path.stem, title, meta.get("demo", ""), body, meta))
    def order(lesson):
        try:
            return (float(lesson.meta.get("order")), lesson.slug)
        except (TypeError, ValueError):
            return (float("inf"), lesson.slug)
    return sorted(out, key=order)


def list_assets(folder: Path = ASSETS_DIR) -> tuple[list[Path], list[Path]]:
    """(images, tables) in assets/, sorted by name."""
    if not Path(folder).is_dir():
        return [], []
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.stat().st_size <= MAX_FILE_BYTES)
    images = [p for p in files if p.suffix.lower() in IMAGE_EXT]
    # one picture per figure: a PNG and an SVG of the same figure show the PNG (lighter to send)
    stems = {(p.parent, p.stem) for p in images if p.suffix.lower() != ".svg"}
    images = [p for p in images if p.suffix.lower() != ".svg" or (p.parent, p.stem) not in stems]
    return images, [p for p in files if p.suffix.lower() in TABLE_EXT]
