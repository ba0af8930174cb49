"""What one step reports besides the new state."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StepInfo:
    grad_evals: int = 1                     # gradient evaluations per chain in this step
    accepted: np.ndarray | None = None      # per chain, for a step with a Metropolis test
    energy_error: np.ndarray | None = None  # H1 - H0 per chain, for a step that proposes a trajectory


ONE_GRADIENT = StepInfo()   # an Euler or splitting step: shared, so a step allocates no record
