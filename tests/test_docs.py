"""docs/errata.md and the citations of the sources: a reader has the papers, not the folder they were
handed to the project in, so the product cites them by author, year and title and links its corrections to
the errata page; each erratum names the tests that prove it, and those tests exist."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ERRATA = ROOT / "docs" / "errata.md"
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]-*.md"))
SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "build", "dist", "node_modules", ".ruff_cache", ".pytest_cache"}
TEXT_SUFFIXES = {".py", ".md", ".txt", ".toml", ".cfg", ".yaml", ".yml"}

# citations of the folder the sources came in (its README's erratum numbers, its file numbers, its path),
# spelt in pieces so that this file does not match itself
SEEDS = "seed" + "s"
SEED_CITATION = re.compile("|".join([
    SEEDS + r"?( |_)?(erratum|errata|readme|0[0-9]{2})",
    "seed" + r" 00[0-9]",
    "notes" + r" 00[0-9]",
    r"\.\./" + "shared",
    "shared/" + SEEDS,
    "HTML" + " copy",
]), re.I)
TEST_REF = re.compile(r"`((?:tests|lessons/checks)/[\w/]+\.py)::(\w+)")
ANCHOR = re.compile(r'^<a id="(e\d+)"></a>$', re.M)
ERRATA_LINK = re.compile(r"\]\((?:\.\./)?(?:docs/)?errata\.md#([\w-]+)\)")


def product_files():
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if path.is_file() and path.suffix in TEXT_SUFFIXES and not SKIP_DIRS & set(rel.parts) \
                and not any(part.endswith(".egg-info") for part in rel.parts):
            yield path


def entries():
    """{anchor: the entry's text up to the next anchor}."""
    text = ERRATA.read_text(encoding="utf-8")
    marks = list(ANCHOR.finditer(text))
    return {m.group(1): text[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(text)]
            for i, m in enumerate(marks)}


def test_nothing_cites_the_seeds_folder():
    hits = []
    for path in product_files():
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if SEED_CITATION.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not hits, "cite the paper and docs/errata.md instead:\n" + "\n".join(hits)


def test_the_citation_pattern_sees_what_it_must():
    for text in ("(" + SEEDS + " erratum 4)", SEEDS + " README, erratum 2", "(seed" + " 002)",
                 "Oono 2016, notes" + " 003", "../" + "shared/" + SEEDS + "/README.md"):
        assert SEED_CITATION.search(text), text
    for text in ("--seed 3", "seed 0 -->", "mean of 5 " + SEEDS, "errata E4", "fixed " + SEEDS + " and"):
        assert not SEED_CITATION.search(text), text


def test_entries_are_numbered_with_stable_anchors_and_headings():
    found = entries()
    assert list(found) == [f"e{i}" for i in range(1, len(found) + 1)] and len(found) >= 6
    for anchor, text in found.items():
        n = anchor[1:]
        assert re.match(rf"\s*## E{n}\. \S", text), f"{anchor}: the anchor must sit right above '## E{n}. ...'"
        assert f"| E{n} |" in ERRATA.read_text(encoding="utf-8"), f"E{n} is missing from the summary table"


@pytest.mark.parametrize("anchor", sorted(entries(), key=lambda a: int(a[1:])))
def test_each_entry_names_tests_that_exist(anchor):
    text = entries()[anchor]
    assert "printed" in text.lower(), f"{anchor}: say what is printed"
    assert "correct" in text.lower(), f"{anchor}: give the correction"
    assert "**Proof.**" in text, f"{anchor}: name the tests that prove it"
    refs = TEST_REF.findall(text)
    assert refs, f"{anchor}: no `tests/...py::name` reference"
    for file, name in refs:
        path = ROOT / file
        assert path.is_file(), f"{anchor}: {file} does not exist"
        assert re.search(rf"^def {name}\(", path.read_text(encoding="utf-8"), re.M), \
            f"{anchor}: {file} defines no function {name}"


def test_errata_links_point_to_existing_anchors():
    anchors = set(entries())
    linked = set()
    for path in [*LESSONS, ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for target in ERRATA_LINK.findall(path.read_text(encoding="utf-8")):
            assert target in anchors, f"{path.relative_to(ROOT)}: link to missing anchor errata.md#{target}"
            if path in LESSONS:
                linked.add(target)
    assert linked == anchors, f"entries no lesson links to: {sorted(anchors - linked)}"


def test_the_errata_link_back_to_existing_lessons():
    for target in re.findall(r"\]\(\.\./lessons/([\w-]+\.md)\)", ERRATA.read_text(encoding="utf-8")):
        assert (ROOT / "lessons" / target).is_file(), f"errata.md: link to missing lesson {target}"


def test_readme_points_to_the_errata():
    assert "docs/errata.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_parameters_table_is_the_declarations():
    """docs/parameters.md is generated from the samplers' declarations; a declaration changed without it fails."""
    from samplers.registry import parameters_markdown
    assert (ROOT / "docs" / "parameters.md").read_text(encoding="utf-8") == parameters_markdown(), \
        "docs/parameters.md is behind the declarations: python -m samplers list --params > docs/parameters.md"
