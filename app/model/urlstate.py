"""The configuration as a URL query, and back: a pasted link reproduces the run, seed included.

Keys are short and stable: pot, s, a.<param>, cmp, sb, b.<param>, V, batch, n, seed, speed,
burn, start, D, Q (JSON lists of cell strings), naive, log, design (the designed sampler as JSON, written while a
side runs it). Navigation adds tab, lesson, play, present,
recipe (the recipe editor open) and lang (the interface's language, en or ja).
Nothing from a URL is evaluated: values are parsed as numbers, names are checked against the
registry, and cells go through the library's whitelist parser like typed ones.
"""
from __future__ import annotations

import json
import math
from types import SimpleNamespace
from urllib.parse import parse_qsl, urlencode

import param

from samplers.registry import REGISTRY, sampler_names

from .config import LabConfig, out_of_bounds, url_keys
from .design import from_json, to_json, uses_design
from .i18n import LANGS
from .presets import validate_params

NAV_KEYS = ("tab", "lesson", "play", "present", "recipe", "lang")
MAX_CELLS_JSON = 4000
MAX_MESSAGES = 10      # a link of a thousand junk keys gets ten messages and a count, not a page of them


def url_text(value) -> str:
    """A value as a link writes it: 1/0 for booleans, 2 for 2.0."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def to_query(cfg) -> dict[str, str]:
    """The configuration (a LabConfig, or a mapping of its values) as query items (defaults left out,
    except the ALWAYS ones)."""
    if not isinstance(cfg, LabConfig):
        cfg = SimpleNamespace(**{k: v.default for k, v in LabConfig.param.objects().items()} | dict(cfg))
    q = {}
    for name, key in url_keys(LabConfig).items():
        v, p = getattr(cfg, name), LabConfig.param[name]
        if v is None:
            continue
        if p.metadata["always"] or v != p.default:
            if name in ("sampler_b",) and not cfg.compare:
                continue
            q[key] = url_text(v)
    for k, v in cfg.params.items():
        q[f"a.{k}"] = url_text(v)
    if cfg.compare:
        for k, v in cfg.params_b.items():
            q[f"b.{k}"] = url_text(v)
    for name in ("D", "Q"):
        cells = getattr(cfg, name)
        if cells is not None:
            q[name] = json.dumps(cells, separators=(",", ":"))
    if cfg.design is not None and uses_design(cfg):
        q["design"] = to_json(cfg.design)
    return q


def query_string(cfg, nav: dict | None = None) -> str:
    q = to_query(cfg)
    for k, v in (nav or {}).items():
        if v not in (None, ""):
            q[k] = str(v)
    return "?" + urlencode(q)


def parse_search(search: str) -> dict[str, str]:
    """'?a=1&b=2' -> {'a': '1', 'b': '2'} (last value wins)."""
    return dict(parse_qsl((search or "").lstrip("?"), keep_blank_values=True))


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected 0 or 1")


def parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:     # Python's own message quotes the text again, uncut
        raise ValueError("expected a whole number") from None


def parse_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("expected a number") from None
    if not math.isfinite(value):     # nan passes every bounds check
        raise ValueError("expected a finite number")
    return value


def _cells(text: str):
    if len(text) > MAX_CELLS_JSON:
        raise ValueError("too long")
    cells = json.loads(text)
    if not (isinstance(cells, list) and all(isinstance(row, list) for row in cells)
            and all(isinstance(c, (str, int, float)) for row in cells for c in row)):
        raise ValueError("expected a JSON list of lists of cell strings")
    return [[str(c) for c in row] for row in cells]


def quoted(text: str, limit: int = 40) -> str:
    """A piece of a link as a message shows it: quoted, cut, control characters dropped (the views
    escape it too; this keeps a crafted key from filling the page)."""
    text = "".join(c for c in str(text) if c.isprintable())
    return repr(text if len(text) <= limit else text[:limit] + "…")


def reason_text(text, limit: int = 120) -> str:
    """A library's reason for refusing a link's value, which may quote the value whole: printable and cut."""
    text = "".join(c for c in str(text) if c.isprintable())
    return text if len(text) <= limit else text[:limit] + "…"


def parse_value(p: param.Parameter, text: str):
    """A link's text as the value of a declared parameter: parsed by its type (and its own `parse`, if it
    declares one), within its bounds and choices; ValueError with the reason otherwise."""
    text = text.strip()
    if (p.metadata or {}).get("parse"):
        return p.metadata["parse"](text)
    if isinstance(p, param.Boolean):
        return _bool(text)
    if isinstance(p, param.Selector):
        if text not in p.objects:
            raise ValueError(f"must be one of {', '.join(map(str, p.objects))}")
        return text
    value = (parse_int(text) if isinstance(p, param.Integer) else parse_float(text) if isinstance(p, param.Number)
             else text)
    why = out_of_bounds(p, value)
    if why:
        raise ValueError(why)
    return value


NAV_FLAGS = ("play", "present", "recipe")


def nav_errors(query: dict[str, str], tabs, lessons) -> list[str]:
    """What a link's navigation keys ask for that does not exist (a tab, a lesson) or is not 0/1, worded as
    from_query words a bad value: the page ignores them, and says so."""
    errors = []
    if "tab" in query and query["tab"] not in tabs:
        errors.append(f"URL 'tab'={quoted(query['tab'])}: must be one of {', '.join(tabs)}")
    if query.get("lesson") and query["lesson"] not in lessons:
        errors.append(f"URL 'lesson'={quoted(query['lesson'])}: no such lesson")
    if "lang" in query and query["lang"] not in LANGS:
        errors.append(f"URL 'lang'={quoted(query['lang'])}: must be one of {', '.join(LANGS)}")
    for key in NAV_FLAGS:
        if key in query and query[key].strip().lower() not in ("", "0", "1", "true", "false"):
            errors.append(f"URL {quoted(key)}={quoted(query[key])}: expected 0 or 1")
    return errors


def from_query(query: dict[str, str]) -> tuple[dict, list[str]]:
    """Parameter updates for LabConfig from query items, and a message per item that was ignored."""
    sampler_names()   # loads every module that registers samplers
    upd, errors = {}, []
    names = {v: k for k, v in url_keys(LabConfig).items()}
    params_a, params_b = {}, {}
    for key, text in query.items():
        try:
            if key in names:
                upd[names[key]] = parse_value(LabConfig.param[names[key]], text)
            elif key in ("D", "Q"):
                upd[key] = _cells(text)
            elif key == "design":
                upd[key] = from_json(text)
            elif key.startswith("a.") or key.startswith("b."):
                (params_a if key[0] == "a" else params_b)[key[2:]] = text.strip()
            elif key not in NAV_KEYS:
                errors.append(f"unknown URL key {quoted(key)}")
        except (ValueError, TypeError, RecursionError) as err:   # json refuses deep nesting by recursing
            why = "nested too deeply" if isinstance(err, RecursionError) else reason_text(err)
            errors.append(f"URL {quoted(key)}={quoted(text)}: {why}")
    for side, params, sampler_key in (("a", params_a, "sampler"), ("b", params_b, "sampler_b")):
        sampler = upd.get(sampler_key, LabConfig.param[sampler_key].default)
        known = REGISTRY[sampler].defaults if sampler in REGISTRY else {}
        bad = [k for k in params if k not in known]
        for k in bad:
            errors.append(f"URL key {quoted(side + '.' + k)}: {sampler} has no parameter {quoted(k)}")
            params.pop(k)
        for k in list(params):
            try:
                reason = validate_params(sampler, {k: params[k]})
            except TypeError:        # the library's checks compare eps='' (None) with 0
                reason = "not a valid value"
            if reason:
                errors.append(f"URL {quoted(side + '.' + k)}={quoted(params.pop(k))}: {reason_text(reason)}")
        if params:
            upd["params" if side == "a" else "params_b"] = params
    if len(errors) > MAX_MESSAGES:
        errors[MAX_MESSAGES:] = [f"and {len(errors) - MAX_MESSAGES} more items of the link ignored"]
    return upd, errors


def apply_query(cfg: LabConfig, query: dict[str, str]) -> list[str]:
    """Apply a URL's configuration in one update (one rebuild); returns what was ignored."""
    upd, errors = from_query(query)
    try:
        cfg.param.update(**upd)
    except Exception:   # a value param itself refused (from_query checks them all: a backstop): one by one
        for k, v in upd.items():
            try:
                cfg.param.update(**{k: v})
            except Exception:
                errors.append(f"URL {quoted(url_keys(LabConfig).get(k, k))}: not applied")
    return errors
