"""The Japanese lessons (lessons/ja/, format in lessons/ja/README.md) against their English pages: the same
demo/ladder/check lines in the same order, one `{{eq:k}}` line per English display block in order, only
title and summary in the front matter, the same errata anchors, and prose that is mostly Japanese. The
Japanese errata page (docs/errata.ja.md) against docs/errata.md: every entry's anchor and heading in order,
and in each entry the same tests, checks, in-page and lesson links."""
import re
from pathlib import Path

import pytest
import yaml

from lessons import FRONT_MATTER

ROOT = Path(__file__).resolve().parents[1]
LESSONS = ROOT / "lessons"
JA = LESSONS / "ja"
JA_PAGES = sorted(JA.glob("[0-9][0-9]-*.md"))
ERRATA = ROOT / "docs" / "errata.md"
ERRATA_JA = ROOT / "docs" / "errata.ja.md"

MARKER = re.compile(r"^[ \t]*\{\{(demo|ladder|check:[A-Za-z_][A-Za-z0-9_]*)\}\}[ \t]*$", re.M)
EQ = re.compile(r"^[ \t]*\{\{eq:([0-9]+)\}\}[ \t]*$", re.M)
BRACES = re.compile(r"\{\{.*?\}\}")
ERRATA_ANCHOR = re.compile(r"\]\(\.\./docs/errata\.md#([\w-]+)\)")
# What is not prose: inline math, code spans, link targets, {{...}} lines.
NOT_PROSE = re.compile(r"\$[^$\n]+\$|`[^`\n]*`|\]\([^)\s]*\)|\{\{.*?\}\}")
JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]")
MIN_JAPANESE = 0.6


def split(text: str, name: str):
    m = FRONT_MATTER.match(text)
    if not m:
        return None, text
    meta = yaml.safe_load(m.group(1))
    return (meta if isinstance(meta, dict) else {"<not a mapping>": meta}), m.group(2)


def japanese_share(body: str) -> float:
    prose = NOT_PROSE.sub(" ", body)
    letters = [c for c in prose if c.isalpha()]
    return sum(1 for c in letters if JAPANESE.match(c)) / max(1, len(letters))


def problems(ja_text: str, en_text: str, name: str = "page", front_matter: bool = True) -> list[str]:
    """Everything in which a Japanese page breaks the format of lessons/ja/README.md, as sentences."""
    out = []
    meta, body = split(ja_text, name)
    _, en_body = split(en_text, name)
    if front_matter:
        if meta is None:
            out.append(f"{name}: no front matter")
        elif set(meta) != {"title", "summary"}:
            out.append(f"{name}: front matter keys {sorted(meta)}, expected exactly ['summary', 'title']")
        elif not (isinstance(meta["title"], str) and JAPANESE.search(meta["title"])
                  and isinstance(meta["summary"], str) and japanese_share(meta["summary"]) >= MIN_JAPANESE):
            # A title may be mostly a sampler's name ("SGHMC とその摩擦項"); a summary is a sentence.
            out.append(f"{name}: title and summary must be Japanese strings")
    elif meta is not None:
        out.append(f"{name}: has front matter, its English page has none")
    if "$$" in body:
        out.append(f"{name}: contains $$ (display equations are written {{{{eq:k}}}}, not copied)")
    en_markers, ja_markers = MARKER.findall(en_body), MARKER.findall(body)
    if ja_markers != en_markers:
        out.append(f"{name}: markers {ja_markers}, English has {en_markers}")
    if en_body.count("$$") % 2:
        out.append(f"{name}: the English page has an odd number of $$")
    k = en_body.count("$$") // 2
    eqs = [int(n) for n in EQ.findall(body)]
    if eqs != list(range(1, k + 1)):
        out.append(f"{name}: eq lines {eqs}, expected {list(range(1, k + 1))} (English has {k} display blocks)")
    stray = [s for s in BRACES.findall(body)
             if not (MARKER.fullmatch(s) or EQ.fullmatch(s))] + \
            [line.strip() for line in body.splitlines()
             if "{{" in line and not (MARKER.fullmatch(line) or EQ.fullmatch(line))]
    if stray:
        out.append(f"{name}: {{{{...}}}} not alone on its line or unknown: {sorted(set(stray))}")
    if ERRATA_ANCHOR.findall(body) != ERRATA_ANCHOR.findall(en_body):
        out.append(f"{name}: errata links {ERRATA_ANCHOR.findall(body)}, English has "
                   f"{ERRATA_ANCHOR.findall(en_body)}")
    share = japanese_share(body)
    if share < MIN_JAPANESE:
        out.append(f"{name}: only {share:.0%} of the prose letters are kana or kanji")
    return out


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_there_are_japanese_pages():
    assert JA_PAGES, "no lessons/ja/NN-*.md"


@pytest.mark.parametrize("path", JA_PAGES, ids=lambda p: p.stem)
def test_a_japanese_page_matches_its_english_page(path):
    english = LESSONS / path.name
    assert english.exists(), f"{path.name}: no English page of that name"
    assert problems(read(path), read(english), path.name) == []


def test_the_japanese_glossary_matches_the_english_one():
    path = JA / "glossary.md"
    if not path.exists():
        pytest.skip("no Japanese glossary yet")
    assert problems(read(path), read(LESSONS / "glossary.md"), "glossary.md", front_matter=False) == []
    rows = [line for line in read(path).splitlines() if line.startswith("| $")]
    assert len(rows) == sum(line.startswith("| $") for line in read(LESSONS / "glossary.md").splitlines())


def test_lesson_links_name_existing_pages():
    missing = []
    for path in [*JA_PAGES, JA / "glossary.md"]:
        if path.exists():
            for target in re.findall(r"\]\(([\w-]+\.md)(?:#[\w-]*)?\)", read(path)):
                if not (LESSONS / target).exists():
                    missing.append(f"{path.name} -> {target}")
    assert not missing


# The checker can fail: each way of breaking a real page is caught.
BROKEN = {
    "a check removed": lambda t: t.replace("{{check:ensemble_kl}}\n", "", 1),
    "the demo removed": lambda t: t.replace("{{demo}}\n", "", 1),
    "two checks swapped": lambda t: t.replace("{{check:ensemble_kl}}", "{{X}}").replace(
        "{{check:ergodic_time_average}}", "{{check:ensemble_kl}}").replace("{{X}}", "{{check:ergodic_time_average}}"),
    "an extra ladder": lambda t: t.replace("{{demo}}\n", "{{demo}}\n\n{{ladder}}\n", 1),
    "an equation left out": lambda t: t.replace("{{eq:2}}\n", "", 1),
    "equations out of order": lambda t: t.replace("{{eq:1}}", "{{eq:X}}").replace("{{eq:2}}", "{{eq:1}}").replace(
        "{{eq:X}}", "{{eq:2}}"),
    "an equation copied": lambda t: t.replace("{{eq:3}}", "$$\nx = 1\n$$", 1),
    "a marker inside a sentence": lambda t: t.replace("{{demo}}\n", "デモは {{demo}} です。\n", 1),
    "order in the front matter": lambda t: t.replace("---\ntitle:", "---\norder: 1\ntitle:", 1),
    "English prose": lambda t: t.split("\n---\n", 1)[0] + "\n---\n" + "The density does not move at all. " * 200
    + "\n{{demo}}\n{{eq:1}}\n{{eq:2}}\n{{eq:3}}\n{{check:fokker_planck_residual}}\n{{check:ensemble_kl}}\n"
    "{{check:ergodic_time_average}}\n",
}


@pytest.mark.parametrize("how", sorted(BROKEN))
def test_the_checker_catches_a_broken_page(how):
    ja, en = JA / "01-dynamics-to-distributions.md", LESSONS / "01-dynamics-to-distributions.md"
    broken = BROKEN[how](read(ja))
    assert broken != read(ja), f"the mutation '{how}' did not apply"
    assert problems(broken, read(en), ja.name), f"'{how}' passed the checker"


def test_every_english_lesson_has_a_japanese_page():
    # Issue 31: all twelve lessons read in Japanese; a lesson added in English alone fails here.
    missing = sorted(p.name for p in LESSONS.glob("[0-9][0-9]-*.md") if not (JA / p.name).exists())
    assert not missing, f"no Japanese version of {missing}"


# The errata page: entries start at `<a id="eN"></a>`; within an entry these must be the same as in English.
ENTRY = re.compile(r'^<a id="(e[0-9]+)"></a>[ \t]*$', re.M)
CITED = re.compile(r"`((?:tests|lessons/checks)/[\w/]+\.py::\w+)`")
IN_PAGE = re.compile(r"\]\((#[\w-]+)\)")
LESSON_LINK = re.compile(r"\]\((\.\./lessons/[\w-]+\.md)\)")


def entries(text: str) -> dict[str, str]:
    """Anchor -> the text from it to the next anchor, in page order."""
    marks = list(ENTRY.finditer(text))
    return {m.group(1): text[m.start():marks[i + 1].start() if i + 1 < len(marks) else len(text)]
            for i, m in enumerate(marks)}


def errata_problems(ja_text: str, en_text: str) -> list[str]:
    out = problems(ja_text, en_text, "errata.ja.md", front_matter=False)
    en, ja = entries(en_text), entries(ja_text)
    if list(ja) != list(en):
        out.append(f"errata.ja.md: entries {list(ja)}, English has {list(en)} (same anchors, same order)")
    for anchor, en_entry in en.items():
        ja_entry = ja.get(anchor, "")
        number = anchor[1:]
        if not re.search(rf"^## E{number}\. \S", ja_entry, re.M):
            out.append(f"errata.ja.md: entry {anchor} has no heading '## E{number}. ...'")
        for what, pattern in (("tests", CITED), ("in-page links", IN_PAGE), ("lesson links", LESSON_LINK)):
            if pattern.findall(ja_entry) != pattern.findall(en_entry):
                out.append(f"errata.ja.md, {anchor}: {what} {pattern.findall(ja_entry)}, "
                           f"English has {pattern.findall(en_entry)}")
    return out


def test_the_japanese_errata_match_the_english_page():
    assert ERRATA_JA.exists(), "no docs/errata.ja.md"
    assert errata_problems(read(ERRATA_JA), read(ERRATA)) == []


ERRATA_BROKEN = {
    "an entry removed": lambda t: re.sub(r'<a id="e7"></a>.*?(?=<a id="e8"></a>)', "", t, flags=re.S),
    "two anchors swapped": lambda t: t.replace('id="e3"', 'id="X"').replace('id="e4"', 'id="e3"').replace(
        'id="X"', 'id="e4"'),
    "a heading lost": lambda t: t.replace("## E12. ", "## ", 1),
    "a cited test renamed": lambda t: t.replace("::test_naive_flow_keeps_volume_but_not_energy",
                                                "::test_naive_flow_keeps_volume", 1),
    "a cited test dropped": lambda t: t.replace("`tests/test_hmc.py::test_hmc_and_qnhmc_hit_the_gaussian_100d_moments`",
                                                "the 100-d test", 1),
    "an in-page link lost": lambda t: t.replace("[E2](#e2)", "E2", 1),
    "a lesson link changed": lambda t: t.replace("(../lessons/11-scir.md)", "(../lessons/06-sgrld.md)", 1),
    "an equation copied": lambda t: t.replace("{{eq:4}}", "$$\nx = 1\n$$", 1),
    "an equation left out": lambda t: t.replace("{{eq:6}}\n", "", 1),
}


@pytest.mark.parametrize("how", sorted(ERRATA_BROKEN))
def test_the_errata_checker_catches_a_broken_page(how):
    broken = ERRATA_BROKEN[how](read(ERRATA_JA))
    assert broken != read(ERRATA_JA), f"the mutation '{how}' did not apply"
    assert errata_problems(broken, read(ERRATA)), f"'{how}' passed the checker"
