"""Why a run cannot start (`Block`) and why it stopped or what the user should know (`Notice`).

The model produces these and the views read their `kind`; the `message` is for people only, so
no view ever has to parse text to learn what happened.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class BlockKind(Enum):
    POTENTIAL = "potential"   # the target cannot be built (unknown preset, typed U invalid)
    RECIPE = "recipe"         # the edited D and Q are not a valid recipe
    SAMPLER = "sampler"       # a sampler refuses its parameters or the target
    SIZE = "size"             # more chains than one session may hold
    RUN = "run"               # the ensemble cannot be started


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    message: str        # the sentence shown where the lab lists what blocks it
    detail: str = ""    # the input's own words (the parser's message), shown next to the field at fault
    cells: tuple = ()   # the D/Q entries at fault, as (matrix, i, j): the editor marks them


class NoticeKind(Enum):
    LINK = "link"             # parts of a pasted link were ignored
    DIVERGED = "diverged"     # chains diverged: they were frozen and the run paused
    FAILED = "failed"         # the dynamics raised: the run stopped
    REFUSED = "refused"       # a build was refused for its cost: the previous run goes on
    INTERNAL = "internal"     # a bug of the lab (logged with its traceback), not the user's doing
    QUEUED = "queued"         # heavy work waits for the compute pool behind this session's other work


# how loudly each kind of notice is shown (a Panel Alert's alert_type)
LEVEL = {NoticeKind.LINK: "warning", NoticeKind.DIVERGED: "warning", NoticeKind.FAILED: "danger",
         NoticeKind.REFUSED: "danger", NoticeKind.INTERNAL: "danger", NoticeKind.QUEUED: "warning"}


@dataclass(frozen=True)
class Notice:
    kind: NoticeKind
    message: str

    @property
    def level(self) -> str:
        return LEVEL[self.kind]


def one_line(text, limit: int = 200) -> str:
    """An exception's text as a message shows it: one line of printable characters (it may quote what was
    typed, escapes and all), cut."""
    text = " ".join("".join(c if c.isprintable() else " " for c in str(text)).split())
    return text if len(text) <= limit else text[:limit] + "…"
