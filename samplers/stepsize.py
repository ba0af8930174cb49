"""Step sizes and the target: a default eps scaled to the target's narrowest direction (`target_scale`,
`fitted_eps`), and the eps a sampler may take before its Eq. (9) noise turns negative under the minibatch's own
B-hat (`check_bhat_auto`). The ladder picks an eps by measurement (`samplers.ladder.auto_eps`)."""
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



# -- the target's scale ------------------------------------------------------------------------------------
POWER_ITERATIONS = 60
GRID = 61         # a coarse grid finds the basin; Newton steps find the mode in it


def _hvp(potential, theta, v, h):
    """The Hessian of U at theta times v, by central differences of the gradient (one call for both points)."""
    g = potential.grad(np.stack([theta + h * v, theta - h * v]))
    return (g[0] - g[1]) / (2 * h)


def _mode(potential) -> np.ndarray:
    """U's minimum where the box holds the law (one and two dimensions: the least U on a grid over the box,
    then Newton steps); in more dimensions, the potential's start (its Gaussians' mode, a data posterior's
    start near its mode)."""
    d = potential.dim
    start = np.zeros(d) if potential.start is None else np.asarray(potential.start, float).copy()
    if d > 2:
        return start
    axes = [np.linspace(lo, hi, GRID) for lo, hi in potential.box[:d]]
    pts = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, d)
    with np.errstate(all="ignore"):
        u = np.asarray(potential.U_chunked(pts), float)
    theta = pts[int(np.nanargmin(np.where(np.isfinite(u), u, np.nan)))]
    cell = np.array([(hi - lo) / (GRID - 1) for lo, hi in potential.box[:d]])
    for _ in range(8):
        H = np.stack([_hvp(potential, theta, e, 1e-3 * cell.min()) for e in np.eye(d)], axis=1)
        H = (H + H.T) / 2
        g = potential.grad(theta[None])[0]
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)) or np.any(np.abs(step) > cell):   # Newton stays in the grid's cell
            break
        theta = theta - step
    return theta


def target_scale(potential) -> float | None:
    """The target's smallest length scale: 1/sqrt of the largest curvature of U at its mode (the exact sd for a
    Gaussian, the sd of the narrowest direction for a correlated one). None where it cannot be told (a
    curvature that is not positive and finite)."""
    theta = _mode(potential)
    d = potential.dim
    h = 1e-4 * max(1.0, float(np.abs(theta).max()))
    v = np.ones(d) / np.sqrt(d) + 0.1 * np.arange(d) / max(d, 1)    # not orthogonal to a likely top direction
    v /= np.linalg.norm(v)
    lam = np.nan
    with np.errstate(all="ignore"):
        for _ in range(POWER_ITERATIONS):
            w = _hvp(potential, theta, v, h)
            lam = float(v @ w)
            norm = np.linalg.norm(w)
            if not np.isfinite(norm) or norm == 0:
                break
            v = w / norm
    if not (np.isfinite(lam) and lam > 0):
        return None
    return float(1.0 / np.sqrt(lam))



# The samplers' default step sizes were chosen, and are tested (tests/test_statistical.py), on the lab's presets,
# the narrowest of which is the banana (sd 0.25 across its ridge). On a narrower target the same eps is a larger
# step in the target's own units: the Euler step's bias grows with eps/sigma for dynamics with a momentum
# (theta moves at speed ~ 1, an oscillation lasts ~ sigma) and with eps/sigma^2 for Langevin dynamics (theta
# relaxes in time ~ sigma^2), until the step is unstable. Below SCALE_REF the default keeps that ratio.
SCALE_REF = 0.2


def order(sampler: Sampler) -> int:
    """1 where theta moves through auxiliary variables (a momentum: eps ~ sigma), 2 for theta alone (Langevin:
    eps ~ sigma^2)."""
    return 1 if sampler.n > sampler.dim else 2


def fitted_eps(sampler: Sampler, scale: float | None = None) -> float:
    """The sampler's default eps on this target: its own default, times (sigma / SCALE_REF)^order when the
    target's narrowest sd sigma (`target_scale`) is below SCALE_REF. Simplex samplers keep theirs (their step is
    in the simplex's own parametrisation), as does a target whose curvature cannot be told."""
    eps = float(sampler.spec.defaults[sampler.spec.step_param])
    if sampler.spec.family == "simplex":
        return eps
    scale = target_scale(sampler.target) if scale is None else scale
    if scale is None or scale >= SCALE_REF:
        return eps
    return eps * (scale / SCALE_REF) ** order(sampler)


def fit_eps(sampler: Sampler) -> Sampler:
    """The sampler with its default eps fitted to its target (in place; for a sampler whose eps was not given)."""
    eps = fitted_eps(sampler)
    if eps != sampler.params[sampler.spec.step_param]:
        sampler.params[sampler.spec.step_param] = eps
    return sampler
