"""Files behind the Lessons and Paper figures sections: lessons/*.md with front matter, the glossary
lessons/glossary.md and docs/errata.md (shown after the lessons), assets/*."""
from __future__ import annotations

from pathlib import Path

from lessons import PAGES, Lesson, load_lessons

ROOT = Path(__file__).resolve().parents[2]
LESSONS_DIR = ROOT / "lessons"
ERRATA = ROOT / "docs" / "errata.md"
ERRATA_SLUG = "errata"     # its key in the Lessons section (?tab=lessons&lesson=errata)
GLOSSARY = LESSONS_DIR / "glossary.md"
GLOSSARY_SLUG = "glossary"
ASSETS_DIR = ROOT / "assets"
IMAGE_EXT = {".png", ".jpg", ".jpeg", ".gif", ".svg"}
TABLE_EXT = {".csv", ".md"}
MAX_FILE_BYTES = 2_000_000
# Every session that opens the Lessons section reads the same files: they are parsed once per process
# and again when one changes (its modification time or size). The Lesson objects are shared, read only.
_PARSED: dict = {}


def _stamp(paths) -> tuple | None:
    try:
        return tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths)
    except OSError:
        return None


def _parsed(key, stamp, parse):
    if stamp is None:
        return parse()
    hit = _PARSED.get(key)
    if hit is None or hit[0] != stamp:
        hit = _PARSED[key] = (stamp, parse())
    return hit[1]


def list_lessons(folder: Path = LESSONS_DIR) -> list:
    """The course's pages, parsed by the lessons package; a malformed page is left out, not fatal."""
    stamp = _stamp(sorted(Path(folder).glob(PAGES)))
    return list(_parsed(("lessons", str(folder)), stamp, lambda: load_lessons(folder, strict=False)))


def errata_page(path: Path = ERRATA) -> Lesson | None:
    """docs/errata.md as a page of the Lessons section (the lessons link to it): no front matter, no demo,
    no checks; its title is its first heading. None if the file is missing or unreadable."""
    return _parsed(("errata", str(path)), _stamp([Path(path)]), lambda: _errata(Path(path)))


def glossary_page(path: Path = GLOSSARY) -> Lesson | None:
    """lessons/glossary.md (the symbols the lessons share; each lesson links to it) as a page like the errata."""
    return _parsed(("glossary", str(path)), _stamp([Path(path)]), lambda: _errata(
        Path(path), GLOSSARY_SLUG, 999, "The symbols the lessons share, one meaning each."))


def _errata(path: Path, slug: str = ERRATA_SLUG, order: int = 1000,
            summary: str = "Errors in the sources, their corrections and the tests that prove them.") -> Lesson | None:
    try:
        body = path.read_text(encoding="utf-8")
    except OSError:
        return None
    title = next((line[2:].strip() for line in body.splitlines() if line.startswith("# ")), slug.title())
    return Lesson(slug, Path(path), title, order, summary, "", [], body)


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
