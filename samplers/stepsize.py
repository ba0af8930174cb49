"""Step sizes and the target: what eps a sampler may take before its Eq. (9) noise turns negative under the
minibatch's own B-hat (`check_bhat_auto`)."""
from __future__ import annotations

import numpy as np

from samplers.sampler import Sampler, SamplerError

PREFLIGHT_CHAINS = 256   # start states probed for B-hat
PREFLIGHT_DRAWS = 4      # batches drawn at each: B-hat is an estimate, and varies from batch to batch


def _noise_ok(recipe, z, u, g, eps: float, bhat, beta: float) -> bool:
    for plan in recipe.block_plan:
        rows = plan["noisy"]
        if not rows.size or not plan["uses_grad"]:
            continue
        cov = recipe.noise_cov(z, u, g, eps, bhat, rows, beta)
        cov = cov if cov.ndim == 3 else cov[None]
        if np.linalg.eigvalsh(cov).min() < -1e-12 * max(1.0, float(np.abs(cov).max())):
            return False
    return True


def check_bhat_auto(sampler: Sampler, z: np.ndarray, seed: int = 0) -> None:
    """With Bhat = auto (the minibatch's own estimate), refuse before any step an eps at which Eq. (9)'s noise
    covariance eps (2D/beta - eps B-hat) is not positive semidefinite at the chains' start: the run would stop
    with a RecipeError at the first batch whose estimate is that large. z: the chains' start states (the first
    PREFLIGHT_CHAINS are probed). Draws from a generator of its own, so the run's stream is unchanged; the
    oracle's last batch is overwritten by the run's first call.

    This is checked where the chains start: B-hat moves with theta and from batch to batch, so a run at an eps
    just under the bound may still meet one (the engine's message then names the step size and B-hat too).
    The message names the largest eps that passes, halved for that reason."""
    if sampler.bhat is not None or not getattr(sampler.oracle, "noisy", False) or sampler.recipe is None:
        return
    recipe = sampler.recipe
    if "noise_correction" in recipe.drop or not recipe.noisy.size:
        return
    rng = np.random.default_rng(seed + 0x5eed)
    z = np.ascontiguousarray(z[:PREFLIGHT_CHAINS])
    eps, beta = sampler.step_size(1), sampler.beta
    worst = None
    for _ in range(PREFLIGHT_DRAWS):
        u, g = sampler.oracle(z[:, : sampler.dim], rng, value=recipe.needs_u)
        b = sampler.oracle.bhat(z[:, : sampler.dim])
        if not _noise_ok(recipe, z, u, g, eps, b, beta):
            worst = (u, g, b)
            break
    if worst is None:
        return
    lo, hi = 0.0, eps       # the noise covariance loses definiteness as eps grows: bisect for the bound
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _noise_ok(recipe, z, *worst[:2], mid, worst[2], beta) else (lo, mid)
    raise SamplerError(
        f"Bhat=auto: at eps = {eps:g} the minibatch's own gradient-noise estimate B-hat exceeds what Eq. (9) "
        f"can subtract (2D/beta - eps B-hat is not positive semidefinite where the chains start); take "
        f"eps <= {lo / 2:.3g}, a larger --batch, or set Bhat to a number")

