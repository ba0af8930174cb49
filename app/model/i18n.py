"""The interface in English and Japanese: a small catalogue of TOML files, app/locale/<lang>/*.toml, each
mapping an English string (the key, exactly as the code writes it) to its translation.

A small catalogue rather than gettext: the files are read as they are (no compiled .mo, no build step on a
fresh server, no Babel), a key is the English text itself so a test can list every string the code asks for
and every one the catalogue lacks, and TOML refuses a key given twice. Strings with values in them are
templates with named fields ("{n} chains"): the template is looked up, then formatted.
"""
from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parents[1] / "locale"
LANGS = ("en", "ja")
DEFAULT_LANG = "en"
LANG_NAMES = {"en": "English", "ja": "日本語"}


def parse_lang(value) -> str:
    """A link's lang= value, or the default for anything else (the caller reports bad values)."""
    return value if value in LANGS else DEFAULT_LANG


@cache
def catalogue(lang: str) -> dict[str, str]:
    """Every entry of the language's files; one key in two files is an error (the files are per area)."""
    if lang == DEFAULT_LANG:
        return {}
    merged: dict[str, str] = {}
    for path in sorted((LOCALE_DIR / lang).glob("*.toml")):
        with path.open("rb") as f:
            entries = tomllib.load(f)
        for key, value in entries.items():
            if not isinstance(value, str):
                raise ValueError(f"{path.name}: the entry for {key!r} is not a string")
            if key in merged and merged[key] != value:
                raise ValueError(f"{path.name}: {key!r} is translated differently in another file")
            merged[key] = value
    return merged


def N_(text: str) -> str:
    """Marks an English text that is translated where it is shown (a constant, a table's entry): the catalogue
    test reads the literal here as it reads tr()'s (gettext's convention)."""
    return text


def tr(text: str, lang: str = DEFAULT_LANG, /, **fields) -> str:
    """The text in the language (English where the catalogue has no entry), with its fields filled in."""
    out = catalogue(lang).get(text, text) if lang != DEFAULT_LANG else text
    return out.format(**fields) if fields else out


# A template's fields holding text of their own (a reason, a list of reasons) are translated in turn; the
# others (a value, a name, a number) are shown as they are.
NESTED_FIELDS = ("why", "reason", "rest", "what", "noun", "bounds", "title", "names", "known")
# fields holding a list of reasons or phrases: (the English separator, the language's), each item translated
LIST_FIELDS = {"items": ("; ", "; "), "dirs": (" and as ", "、")}
# fields that hold a number or a bound: they match no space (so "{value} (not applied)" is told from "{value}")
NUMBER_FIELDS = ("value", "lo", "hi", "n", "k", "t", "s", "mb", "ms", "pos", "most", "chains", "budget", "eps",
                 "line", "column", "i", "d", "fn")
# fields that name a place (a key, a cell, a file): they hold no ": ", so that a message's own prefix ("line 3,
# column 7: ") is matched by its template, not swallowed by a label's
LABEL_FIELDS = ("label", "key", "cell", "file", "left", "right")


def _number(field: str) -> bool:
    """A number field: named so, or x1, x2, ... (a list's items, whose numbers must not run into the next item)."""
    return field in NUMBER_FIELDS or re.fullmatch(r"x\d+", field) is not None


MESSAGES = "messages.toml"     # the templates that match messages (the other files' templates are the code's own)
# the lessons' check lines (lessons/checks/), matched as messages are; a file of their own, as they are many
CHECKS = "checks.toml"
TEMPLATE_FILES = (MESSAGES, CHECKS)


@cache
def _patterns(lang: str) -> list[tuple[re.Pattern, str]]:
    """The language's message templates (messages.toml, checks.toml) as patterns over the English text, the most
    specific (longest words) first. Only these: a template the code fills in itself ("{shape}: {parts}.") would match
    about any message."""
    entries = {}
    for name in TEMPLATE_FILES:
        path = LOCALE_DIR / lang / name
        if path.exists():
            with path.open("rb") as f:
                entries |= tomllib.load(f)
    out = []
    for key, value in entries.items():
        if "{" not in key:
            continue
        parts = re.split(r"\{(\w+)\}", key)
        regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^\\s,;()]+?)" if _number(p) else
                        f"(?P<{p}>(?:(?!: ).)+?)" if p in LABEL_FIELDS else
                        f"(?P<{p}>.+?)" for i, p in enumerate(parts))
        try:
            out.append((re.compile(regex + r"\Z", re.S), value, len("".join(parts[::2]))))
        except re.error:           # a field named twice: usable by tr(), not as a pattern
            continue
    out.sort(key=lambda item: -item[2])
    return [(pattern, value) for pattern, value, _ in out]


MAX_MATCHED = 4000     # characters: a longer message (never written by the lab) is shown as it is
MAX_DEPTH = 5          # templates within templates: a file's line, a field, a cell, its reason, the reason's own


def tr_message(text: str, lang: str = DEFAULT_LANG, /, _depth: int = 0) -> str:
    """A message the library or the model wrote in English (a refusal, a link's ignored value), in the language:
    its exact entry, else the first template it matches with the fields filled in, else the English. It may quote
    what a user typed: the matching is bounded (its length, the depth of nested fields)."""
    if lang == DEFAULT_LANG or not text:
        return text
    table = catalogue(lang)
    if text in table:
        return table[text]
    if len(text) > MAX_MATCHED or _depth > MAX_DEPTH:
        return text
    for pattern, value in _patterns(lang):
        m = pattern.match(text)
        if m is None:
            continue
        fields = m.groupdict()
        for name in fields:
            if name in NESTED_FIELDS:
                fields[name] = tr_message(fields[name], lang, _depth=_depth + 1)
            elif name in LIST_FIELDS:
                sep, out_sep = LIST_FIELDS[name]
                fields[name] = out_sep.join(tr_message(item, lang, _depth=_depth + 1)
                                            for item in fields[name].split(sep))
        try:
            return value.format(**fields)
        except (KeyError, IndexError, ValueError):
            return text
    return text
