"""`InputError`: the library refuses what a user gave it (a potential, a sampler's parameters, a recipe, a
design, a gradient oracle), with a message that names the input.

Every refusal of input derives from it, so that a caller can tell a user's mistake (show the message) from a
bug (log the traceback): a bare ValueError or TypeError is a bug. It is a ValueError, as the refusals were
before it existed.
"""
from __future__ import annotations


class InputError(ValueError):
    """What the user gave is refused; the message says which input and why."""
