"""The interface in English and Japanese: a small catalogue of TOML files, app/locale/<lang>/*.toml, each
mapping an English string (the key, exactly as the code writes it) to its translation.

A small catalogue rather than gettext: the files are read as they are (no compiled .mo, no build step on a
fresh server, no Babel), a key is the English text itself so a test can list every string the code asks for
and every one the catalogue lacks, and TOML refuses a key given twice. Strings with values in them are
templates with named fields ("{n} chains"): the template is looked up, then formatted.
"""
from __future__ import annotations

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


def tr(text: str, lang: str = DEFAULT_LANG, /, **fields) -> str:
    """The text in the language (English where the catalogue has no entry), with its fields filled in."""
    out = catalogue(lang).get(text, text) if lang != DEFAULT_LANG else text
    return out.format(**fields) if fields else out
