"""Files behind the Lessons and Paper figures sections: lessons/*.md with front matter, the glossary
lessons/glossary.md and docs/errata.md (shown after the lessons), assets/*. In Japanese: lessons/ja/*.md,
lessons/ja/glossary.md and docs/errata.ja.md, the words only (their equations, demos and checks are the English
pages', lessons/ja/README.md); a page without a translation is shown in English."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml

from lessons import PAGES, Lesson, load_lessons, translate, with_equations

from .i18n import tr

ROOT = Path(__file__).resolve().parents[2]
LESSONS_DIR = ROOT / "lessons"
ERRATA = ROOT / "docs" / "errata.md"
TRANSLATED_ERRATA = {"ja": ROOT / "docs" / "errata.ja.md"}
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


def list_lessons(folder: Path = LESSONS_DIR, lang: str = "en") -> list:
    """The course's pages, parsed by the lessons package; a malformed page is left out, not fatal. In another
    language each page is the English one (the same demo and check objects) with its translation's words."""
    stamp = _stamp(sorted(Path(folder).glob(PAGES)))
    english = _parsed(("lessons", str(folder)), stamp, lambda: load_lessons(folder, strict=False))
    if lang == "en":
        return list(english)
    paths = [Path(folder) / lang / lesson.path.name for lesson in english]
    stamp = _stamp(sorted(Path(folder).glob(PAGES)) + [p for p in paths if p.exists()])
    return list(_parsed(("lessons", str(folder), lang), stamp, lambda: [_translated(e, p, lang)
                                                                        for e, p in zip(english, paths)]))


def _translated(page: Lesson, path: Path, lang: str) -> Lesson:
    """The page in `lang`, or in English where its translation is missing or breaks the format."""
    try:
        return translate(page, path, lang) if path.exists() else page
    except (ValueError, TypeError, OSError, yaml.YAMLError):
        return page


def errata_page(path: Path = ERRATA, lang: str = "en") -> Lesson | None:
    """docs/errata.md as a page of the Lessons section (the lessons link to it): no front matter, no demo,
    no checks; its title is its first heading. None if the file is missing or unreadable. In Japanese,
    docs/errata.ja.md with the English page's equations (the English page where it is missing or malformed)."""
    english = _parsed(("errata", str(path)), _stamp([Path(path)]), lambda: _errata(Path(path)))
    other = TRANSLATED_ERRATA.get(lang) if Path(path) == ERRATA else None
    if english is None or other is None:
        return english
    return _parsed(("errata", str(other)), _stamp([Path(path), other]), lambda: _translated_page(
        english, other, lang, tr("Errors in the sources, their corrections and the tests that prove them.", lang))) \
        or english


def glossary_page(path: Path = GLOSSARY, lang: str = "en") -> Lesson | None:
    """lessons/glossary.md (the symbols the lessons share; each lesson links to it) as a page like the errata;
    in another language lessons/<lang>/glossary.md."""
    english = _parsed(("glossary", str(path)), _stamp([Path(path)]), lambda: _errata(
        Path(path), GLOSSARY_SLUG, 999, "The symbols the lessons share, one meaning each."))
    other = Path(path).parent / lang / Path(path).name
    if english is None or lang == "en" or not other.exists():
        return english
    return _parsed(("glossary", str(other)), _stamp([Path(path), other]),
                   lambda: _translated_page(english, other, lang, tr("The symbols the lessons share, one meaning "
                                                                     "each.", lang))) or english


def _translated_page(english: Lesson, path: Path, lang: str, summary: str) -> Lesson | None:
    """A page without front matter (errata, glossary) in `lang`: its body with the English equations, its title
    its first heading."""
    try:
        body = with_equations(path.read_text(encoding="utf-8"), english.body, path.name)
    except (ValueError, OSError):
        return None
    title = next((line[2:].strip() for line in body.splitlines() if line.startswith("# ")), english.title)
    return replace(english, path=path, title=title, summary=summary, body=body, lang=lang)


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
