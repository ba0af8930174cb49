"""YAML read as plain data with where each value stands (design files, model files): YAML's safe subset only
(yaml.safe_load's constructors; no tags that build Python objects), each value's line and column kept for the
error messages, and the text's size, nesting and number of values bounded before and while it is walked."""
from __future__ import annotations

import yaml

PLAIN_TAGS = ("tag:yaml.org,2002:seq", "tag:yaml.org,2002:map")
# A file nests its brackets two or three deep. PyYAML took 0.6-11 s to refuse 4 kB of nested `[` (recursing to
# Python's limit), on the server's event loop (issue 28): counted first, in one pass.
MAX_FLOW_DEPTH = 32


def _mark(mark) -> tuple[int, int] | tuple[None, None]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (None, None)


class Marked:
    """A file read from YAML: the plain data, and the position of every value in it by its key path."""

    def __init__(self, data, marks: dict, key_marks: dict, error=None, text: str = ""):
        self.data, self.marks, self.key_marks, self.text = data, marks, key_marks, text
        self._error = error

    def at(self, key: tuple) -> tuple[int, int] | tuple[None, None]:
        """(line, column) of the value at key, or of the nearest enclosing value that has one."""
        key = tuple(key)
        while key and key not in self.marks:
            key = key[:-1]
        # the whole file is no place: an error about it (a key missing) names no line
        return self.marks.get(key, (None, None)) if key else (None, None)

    def error(self, key: tuple, message: str, cells: tuple = (), at_key: bool = False):
        line, column = self.key_marks.get(tuple(key), (None, None)) if at_key else (None, None)
        if line is None:
            line, column = self.at(key)
        return self._error(message, key, line, column, cells)


def read_marked(text: str, error, noun: str, empty: str, keys: str, max_chars: int, max_nodes: int) -> Marked:
    """Parse text; `error(message, key, line, column)` (with the line and column YAML reports) for anything that
    is not a mapping of plain values. `noun` names the file in messages ("the design"), `empty` and `keys` say
    what it needs."""
    if not isinstance(text, str):
        raise error(f"{noun} is YAML text, not {type(text).__name__}")
    if len(text) > max_chars:
        raise error(f"{noun} is {len(text):,} characters long (at most {max_chars:,})")
    if _flow_depth(text) > MAX_FLOW_DEPTH:
        raise error(f"{noun} is nested too deeply")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is None:
            raise error(f"{noun} is empty: {empty}")
        if not isinstance(node, yaml.MappingNode):
            raise error(f"{noun} must be a mapping of keys ({keys})", (), *_mark(node.start_mark))
        marks, key_marks = {}, {}
        data = _plain(node, (), marks, key_marks, [max_nodes, max_nodes], error, noun)
    except yaml.MarkedYAMLError as err:
        line, column = _mark(err.problem_mark or err.context_mark)
        what = err.problem or err.context or "unreadable"
        raise error(f"not valid YAML: {what}", (), line, column) from None
    except yaml.YAMLError as err:
        raise error(f"not valid YAML: {str(err).splitlines()[0] if str(err) else 'unreadable'}") from None
    except RecursionError:
        raise error(f"{noun} is nested too deeply") from None
    return Marked(data, marks, key_marks, error, text)


def _flow_depth(text: str) -> int:
    """The deepest nesting of [ and { (brackets inside quotes count too: a file has no reason for 32)."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(depth - 1, 0)
    return deepest


def _plain(node, key: tuple, marks: dict, key_marks: dict, budget: list, error, noun: str):
    budget[0] -= 1
    if budget[0] < 0:
        raise error(f"{noun} has more than {budget[1]:,} values (aliases count each time they are used)")
    marks[key] = _mark(node.start_mark)
    if not isinstance(node, yaml.ScalarNode) and node.tag not in PLAIN_TAGS:
        # a scalar's tag is the safe constructor's to refuse; a list or mapping would be walked as plain data
        # with its tag silently ignored
        raise error(f"not valid YAML: the tag {short(node.tag)} is not allowed (plain YAML only)", key,
                    *_mark(node.start_mark))
    if isinstance(node, yaml.MappingNode):
        out = {}
        for k_node, v_node in node.value:
            if not isinstance(k_node, yaml.ScalarNode):
                raise error("a key must be a plain name", key, *_mark(k_node.start_mark))
            name = str(_scalar(k_node))
            if name in out:
                raise error(f"'{short(name)}' is given twice", key + (name,), *_mark(k_node.start_mark))
            key_marks[key + (name,)] = _mark(k_node.start_mark)
            out[name] = _plain(v_node, key + (name,), marks, key_marks, budget, error, noun)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(v, key + (i,), marks, key_marks, budget, error, noun) for i, v in enumerate(node.value)]
    return _scalar(node)


def _scalar(node):
    # the safe constructor's own scalar rules (1 is an int, 0.5 a float, yes a bool, "1" a string); an unknown tag
    # (!!python/object) raises its ConstructorError, with the mark
    return yaml.constructor.SafeConstructor().construct_object(node)


def short(text: str, limit: int = 40) -> str:
    text = "".join(c for c in str(text) if c.isprintable())
    return text if len(text) <= limit else text[:limit] + "…"
