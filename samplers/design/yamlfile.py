"""A design file read as plain data with where each value stands (`samplers.marked`), and its error."""
from __future__ import annotations

from samplers import marked
from samplers.engine.symbols import RecipeError
from samplers.marked import MAX_FLOW_DEPTH, PLAIN_TAGS, read_marked, short

__all__ = ["DesignError", "Marked", "read_yaml", "short", "MAX_CHARS", "MAX_NODES", "MAX_FLOW_DEPTH", "PLAIN_TAGS"]

MAX_CHARS = 64_000     # a design is a few hundred characters; this is not a data format
MAX_NODES = 2_000      # counted as walked: aliases to large lists cannot multiply the work


class DesignError(RecipeError):
    """A design file that cannot be used. The message names the key or cell, after its line and column when
    the file gives them; `key` is the path to the value at fault (("D", 0, 1), ("params", "eps")), `line` and
    `column` count from 1 (None when the fault is not at one place)."""

    def __init__(self, message: str, key: tuple = (), line: int | None = None, column: int | None = None,
                 cells: tuple = (), source: str | None = None):
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__((f"{source}: " if source else "") + where + message, cells)
        self.detail, self.key, self.line, self.column, self.source = message, tuple(key), line, column, source

    def located(self, source: str) -> DesignError:
        """The same error, naming the file it is in."""
        return DesignError(self.detail, self.key, self.line, self.column, self.cells, source)


class Marked(marked.Marked):
    """A design's values and their places; its errors are DesignErrors."""

    def __init__(self, data, marks: dict, key_marks: dict, error=None, text: str = ""):
        super().__init__(data, marks, key_marks, error or DesignError, text)


def read_yaml(text: str) -> Marked:
    """Parse design text; DesignError (with the line and column YAML reports) for anything that is not a
    mapping of plain values."""
    m = read_marked(text, DesignError, "the design", "it needs at least D and Q", "aux, kinetic, D, Q, ...",
                    MAX_CHARS, MAX_NODES)
    return Marked(m.data, m.marks, m.key_marks, DesignError, m.text)
