"""Bias against step size: the stationary error of a sampler on a ladder of step sizes.

For each ε the chains run for the same simulated time (steps = T/ε), and after a burn-in of the same
time for every ε the pooled samples are scored against the exact law: KL of their histogram to the exact
bin masses, and |E[θ₁²] − exact|. A recipe's error falls with ε (its only bias is the discretisation's); a
naive sampler levels off at a floor that does not vanish as ε → 0, which is the defining test of one (Ma,
Chen & Fox 2015, Sec. 3; Chen, Fox & Guestrin 2014, Sec. 3.1).

Which law is scored (`LadderPoint.law`): on a two-dimensional target, the joint law of (θ₁, θ₂), by the
diagnostics' own score and noise floor (`samplers.accuracy`: KL on its 50 × 50 bins, the floor from the
between-chain variance of the bin counts); a bias across a narrow ridge shows in the joint law only (Welling &
Teh's posterior: docs/notes/stepsize.md). Elsewhere θ₁'s marginal, the law known there (one dimension, and the
Gaussians' closed-form marginals): a histogram of N effectively independent samples over B bins has KL ≈
(B − 1)/(2N) to its own law, and `kl_noise` estimates this from the samples' batch-means variance, so a plot can
show where the MC noise, not the sampler, sets the error.
"""
from __future__ import annotations

import copy
import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from samplers import accuracy
from samplers import diagnostics as dg
from samplers.gradients import SimulatedNoise
from samplers.run import Ensemble
from samplers.sampler import Sampler

BINS = 30            # few bins: the floor of a naive sampler is a broad shape error, and noise grows with B
JOINT = "joint"      # LadderPoint.law: the joint law of (θ₁, θ₂), on the diagnostics' bins
MARGINAL = "theta1"  # θ₁'s marginal, on BINS bins
JOINT_KEPT = 240     # states kept per chain on a joint rung (the floor counts their correlation within a chain)
# A joint rung's tolerance: floor + KL_SDS sd. The conformance suite judges a run at 4 sd, where a false failure
# is a wrong verdict; here a false failure only costs a smaller step, and a false pass a biased run: on Welling &
# Teh's posterior SGLD's rung at half its default shows a KL 2.3 to 4.7 sd above its floor over five seeds (a bias,
# which runs at that step fail the suite's rule on 2 of 8 seeds), at a quarter -0.2 to 1.9 (docs/notes/stepsize.md)
KL_SDS = 2.0


class Cancelled(Exception):
    """The caller asked to stop (a new configuration): the partial result is on the exception."""

    def __init__(self, result):
        super().__init__("cancelled")
        self.result = result


@dataclass
class LadderPoint:
    eps: float
    kl: float
    kl_noise: float          # the KL a perfect sampler's histogram of as many effective samples would show
    m2_error: float          # |E[θ₁²] − exact|
    m2_se: float             # its Monte Carlo standard error (batch means over time)
    steps: int
    diverged: int
    law: str = MARGINAL      # which law the KL scores: JOINT or MARGINAL
    kl_tol: float = float("nan")   # the KL under which auto_eps counts the rung's bias as noise

    @property
    def kl_ok(self) -> bool:
        return bool(self.kl <= self.kl_tol)


def law_of(potential) -> str:
    """The law the ladder scores on this target: the joint one where its exact 2-D bin masses are known (every
    two-dimensional target: its grid or its reference), else θ₁'s marginal."""
    return JOINT if potential.dim == 2 else MARGINAL


@dataclass
class LadderResult:
    title: str
    exact_m2: float
    points: list[LadderPoint] = field(default_factory=list)

    @property
    def eps(self) -> np.ndarray:
        return np.array([p.eps for p in self.points])

    @property
    def kl(self) -> np.ndarray:
        return np.array([p.kl for p in self.points])

    @property
    def m2_error(self) -> np.ndarray:
        return np.array([p.m2_error for p in self.points])


def with_eps(sampler: Sampler, eps: float, eps0: float | None = None) -> Sampler:
    """The same sampler (edited recipe included) at step size `eps`, simulating the same SDE as at `eps0`.

    What stays fixed is the continuous-time model, as in the sources' analysis (Chen, Fox & Guestrin 2014,
    Sec. 3; Ma, Chen & Fox 2015, Eq. 8-9): the gradient noise's diffusion B = εV/2 (so simulated noise has
    variance V·ε₀/ε per evaluation, and a numeric B̂ follows it) and momentum resampling every fixed stretch
    of time. Holding V itself fixed instead would make every stochastic-gradient sampler exact as ε → 0,
    the naive ones included: their failure is the SDE's, and the ladder is there to show it.
    Each rung holds its step constant: a step-size schedule (eps_c > 0) is switched off. beta is kept."""
    other = copy.copy(sampler)
    params = {**sampler.params, "eps": float(eps)}
    if "eps_c" in params:
        params["eps_c"] = 0.0
    if eps0 is not None:
        ratio = eps0 / float(eps)
        if params.get("resample_every"):
            params["resample_every"] = max(1, int(round(params["resample_every"] * ratio)))
        if isinstance(sampler.oracle, SimulatedNoise):
            other.oracle = SimulatedNoise(sampler.potential, sampler.oracle.V * ratio)
            if params.get("Bhat") not in (None, 0, 0.0):
                params["Bhat"] = params["Bhat"] * ratio
    other.params = params
    return other


def default_ladder(eps: float, n: int = 6, decades: float = 1.0) -> np.ndarray:
    """n step sizes, log-spaced from ε down over `decades` decades (largest first)."""
    return eps * np.logspace(0.0, -decades, n)


def exact_second_moment(potential, n: int = 2001) -> float:
    lo, hi = potential.box[0]
    xs = np.linspace(lo, hi, n)
    dens = np.asarray(potential.marginals[0](xs), float)
    return float(np.trapezoid(xs ** 2 * dens, xs) / np.trapezoid(dens, xs))


def step_ladder(sampler: Sampler, eps_values, *, chains: int = 2000, time: float = 12.0, burn_time: float = 3.0,
                samples_per_time: float = 2.0, seed: int = 0, bins: int = BINS, eps0: float | None = None,
                progress: Callable[[float], None] | None = None,
                cancel: Callable[[], bool] | None = None, title: str | None = None,
                exact_start: bool = False) -> LadderResult:
    """Run `sampler` at every step size of `eps_values` for `time` units of simulated time after `burn_time`,
    and score the pooled samples against the exact law (`law_of`): on a 2-D target the joint law, JOINT_KEPT
    states kept per chain; else θ₁'s marginal, taken `samples_per_time` times per unit time (as is θ₁² there).
    exact_start: chains start at exact draws (`exact_draws`, where the target has them), so that the burn-in
    needs to cover only the sampler's drift from the exact law, not a far start's approach to it.

    `progress(fraction)` is called as the work goes (fraction of all steps done); `cancel()` is polled
    between chunks of at most CHUNK steps and raises `Cancelled` (with the points done so far)."""
    pot = sampler.target   # exp(-beta U) at the sampler's inverse temperature
    law = law_of(pot)
    lo, hi = pot.box[0]
    edges = np.linspace(lo, hi, bins + 1)
    masses = dg.bin_masses_1d(pot.marginals[0], edges) if law == MARGINAL else None
    result = LadderResult(title or sampler.spec.title, exact_second_moment(pot))
    plan = [(float(e), int(np.ceil(burn_time / e)), int(np.ceil(time / e))) for e in eps_values]
    total, done = sum(b + s for _, b, s in plan), 0
    for k, (eps, burn, steps) in enumerate(plan):
        ens = Ensemble(with_eps(sampler, eps, eps0), chains, seed + k)
        if exact_start:
            draws = exact_draws(pot, ens.z.shape[0], np.random.default_rng(seed + k + 0x5eed))
            if draws is not None:    # theta replaced; the auxiliary variables keep their stationary law
                ens.z[:, : pot.dim] = draws
        if law == JOINT:
            every = max(1, steps // JOINT_KEPT)
        else:
            every = max(1, int(round(1.0 / (samples_per_time * eps))))
        counts, outside = np.zeros(bins), 0.0
        m2_batches, m2_var, kept = [], [], []
        t = 0
        while t < burn + steps:
            if cancel is not None and cancel():
                raise Cancelled(result)
            # chunks end at the burn-in and at every sampling time
            target = burn if t < burn else burn + ((t - burn) // every + 1) * every
            chunk = min(CHUNK, target - t, burn + steps - t)
            ens.advance(chunk)
            t += chunk
            done += chunk
            if t > burn and (t - burn) % every == 0:
                if law == JOINT:
                    kept.append(np.array(ens.theta[:, :2], float))
                else:
                    x = ens.theta[ens.guard.alive, 0]
                    idx = dg.uniform_bin_index(x, lo, bins / (hi - lo), bins)
                    inside = idx >= 0
                    counts += np.bincount(idx[inside], minlength=bins)
                    outside += float((~inside).sum())
                    m2_batches.append(float(np.mean(x ** 2)) if len(x) else np.nan)
                    m2_var.append(float(np.var(x ** 2)) if len(x) else np.nan)
            if progress is not None:
                progress(done / total)
        if law == JOINT:
            theta = np.stack(kept)[:, ens.guard.alive]
            kl, noise, tol = _joint_kl(pot, theta)
            # chains that start at exact draws stay correlated with them for longer than a batch: the standard
            # error is the chains', as the joint floor is
            per_chain = (theta[:, :, 0] ** 2).mean(axis=0)
            m2 = float(per_chain.mean()) if per_chain.size else np.nan
            m2_se = float(per_chain.std(ddof=1) / np.sqrt(per_chain.size)) if per_chain.size > 1 else np.nan
        else:
            series = np.asarray(m2_batches)
            m2_se, n_eff = _batch_se(series, float(np.nanmean(m2_var)) if m2_var else np.nan)
            m2 = float(np.mean(series))
            kl, _ = dg.counts_kl_tv(counts, outside, masses)
            noise = (bins - 1) / (2 * n_eff)
            tol = AUTO_KL_FACTOR * noise
        result.points.append(LadderPoint(eps, kl, noise, abs(m2 - result.exact_m2), m2_se, burn + steps,
                                         int(ens.n_diverged), law, tol))
    return result


def _joint_kl(pot, theta: np.ndarray) -> tuple[float, float, float]:
    """KL of the kept states (kept, alive chains, 2) to the exact joint law, its noise floor and its tolerance:
    the diagnostics' score and floor (`accuracy.score`, `accuracy.kl_error`), floor + KL_SDS sd."""
    if theta.shape[1] < 2:
        return float("inf"), float("nan"), float("nan")
    kl = float(accuracy.score(pot, theta)["kl"])
    floor, sd = accuracy.kl_error(pot, theta)
    return kl, floor, floor + KL_SDS * sd


def exact_draws(pot, n: int, rng, cells: int = 400) -> np.ndarray | None:
    """n exact draws of a target of one or two dimensions: its own sampler where it has one; else, where it carries
    an adaptive reference (typed targets), the last axis by the inverse of its marginal CDF and the first given it
    by `_conditional_draws`; else a grid of `cells` per axis over its box, a cell drawn by its mass (U at its
    centre) and a point uniformly within it (cells of 0.01 x 0.015 on Welling & Teh's box, against posterior sds
    of 0.13 and more). The grid fails where the density is narrower than a cell: in chi-feng's funnel's neck it
    put no draw at all (docs/notes/stepsize.md). None beyond two dimensions without a sampler of its own."""
    own = pot.exact_states(n, rng)
    if own is not None or pot.dim > 2:
        return own
    ref = getattr(pot, "reference", None)
    if ref is not None:
        last = pot.dim - 1
        nodes = ref.nodes(last)
        y = np.interp(rng.random(n), ref.cdf(last)(nodes), nodes)
        if pot.dim == 1:
            return y[:, None]
        return np.stack([_conditional_draws(pot.U, ref.nodes(0), y, rng), y], axis=1)
    axes = [np.linspace(lo, hi, cells + 1) for lo, hi in pot.box[: pot.dim]]
    mids = np.meshgrid(*[(a[:-1] + a[1:]) / 2 for a in axes], indexing="ij")
    u = pot.U_chunked(np.stack([m.ravel() for m in mids], axis=1))
    w = np.exp(-(u - np.nanmin(u)))
    w = np.where(np.isfinite(w), w, 0.0)
    cell = np.unravel_index(rng.choice(w.size, n, p=w / w.sum()), (cells,) * pot.dim)
    return np.stack([a[i] + (hi - lo) / cells * rng.random(n)
                     for a, i, (lo, hi) in zip(axes, cell, pot.box)], axis=1)


def _conditional_draws(U, x: np.ndarray, y: np.ndarray, rng, chunk: int = 200) -> np.ndarray:
    """One draw of theta_1 from exp(-U(., y_i)) for each y_i, on the nodes x (sorted): the density linear between
    nodes, a cell drawn by its trapezoid mass and the point within it by inverting that linear density."""
    out = np.empty(len(y))
    h = np.diff(x)
    for s in range(0, len(y), chunk):
        yy = y[s:s + chunk]
        pts = np.stack([np.broadcast_to(x, (len(yy), len(x))), np.broadcast_to(yy[:, None], (len(yy), len(x)))], -1)
        with np.errstate(all="ignore"):
            u = np.asarray(U(pts.reshape(-1, 2)), float).reshape(len(yy), len(x))
        u = np.where(np.isfinite(u), u, np.inf)
        f = np.exp(-(u - u.min(axis=1, keepdims=True)))
        fa, fb = f[:, :-1], f[:, 1:]
        cum = np.cumsum((fa + fb) / 2 * h, axis=1)
        v = rng.random(len(yy)) * cum[:, -1]
        j = np.minimum((cum < v[:, None]).sum(axis=1), len(h) - 1)
        rows = np.arange(len(yy))
        a, b = fa[rows, j], fb[rows, j]
        # the mass needed inside the cell, in units of its width: a t + (b - a) t^2 / 2 = m
        m = (v - np.where(j > 0, cum[rows, j - 1], 0.0)) / h[j]
        with np.errstate(all="ignore"):
            t = np.where(np.abs(b - a) > 1e-12 * (a + b), (np.sqrt(a * a + 2 * (b - a) * m) - a) / (b - a),
                         m / np.maximum((a + b) / 2, 1e-300))
        out[s:s + chunk] = x[j] + h[j] * np.clip(t, 0.0, 1.0)
    return out


CHUNK = 50     # steps between two polls of cancel(): a few ms at 2000 chains


def _batch_se(series: np.ndarray, var_one: float, batches: int = 10) -> tuple[float, float]:
    """Standard error of the mean of a time series of ensemble means, by batch means, and the effective
    number of independent samples it implies (var_one: the variance of θ² across chains)."""
    series = series[np.isfinite(series)]
    if len(series) < 2 * batches:
        return float("nan"), 1.0
    usable = len(series) // batches * batches
    means = series[:usable].reshape(batches, -1).mean(axis=1)
    se = float(means.std(ddof=1) / np.sqrt(batches))
    n_eff = var_one / se ** 2 if se > 0 and np.isfinite(var_one) else 1.0
    return se, float(max(n_eff, 1.0))


def ladder_csv(results: list[LadderResult]) -> str:
    """One row per (sampler, ε), full precision (titles quoted: an edited sampler's has commas); `law` says which
    law the KL scored (joint or theta1), `kl_tol` the KL auto_eps passes the rung under."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["sampler", "eps", "kl", "kl_noise", "m2_error", "m2_se", "exact_m2", "steps", "diverged", "law",
                "kl_tol"])
    for r in results:
        for p in r.points:
            w.writerow([r.title, repr(p.eps), repr(p.kl), repr(p.kl_noise), repr(p.m2_error), repr(p.m2_se),
                        repr(r.exact_m2), p.steps, p.diverged, p.law, repr(p.kl_tol)])
    return out.getvalue()


AUTO_RUNGS = 2.0 ** np.arange(2, -5, -1)    # times the fitted default, largest first
AUTO_KL_FACTOR = 2.0   # a perfect sampler's KL is a chi-square over BINS - 1 = 29 cells: sd 26 % of its mean
AUTO_M2_SIGMAS = 3.0
AUTO_BURN = 30.0       # time units of burn-in: chains start 0.5 from the mode, many sd of a narrow target away
AUTO_TIME = 12.0       # time units sampled
# A joint rung's chains start at exact draws, so its burn-in covers only the sampler's drift from the exact law,
# and a short run of many chains measures more than a long one of few: a chain's samples along a slow direction
# stay correlated with its start (on Welling & Teh's posterior, SGLD: 2000 chains for 2 + 3 time units give the
# joint KL an sd of 3e-4, 1000 chains for 2 + 6 units 6e-4, 1000 for 30 + 12 from the start 0.5 out 2-3e-4 at
# 3.4 times the cost; docs/notes/stepsize.md)
AUTO_BURN_EXACT = 2.0
AUTO_TIME_EXACT = 3.0
AUTO_CHAINS = 1000
AUTO_CHAINS_JOINT = 2000
# A rung of 2 + 3 units is shorter than the time a sampler with a momentum takes to drift from the exact law at a
# large step: mSGNHT on Welling & Teh passes its 0.0509 rung there (KL 0.00493 <= 0.00465 + 2 x 0.00046) and fails
# at 24 units (4.6 sd) and in the suite's runs of 50 units (docs/notes/stepsize.md). So on a joint-scored target a
# passing rung of such a sampler is run again AUTO_CONFIRM times as long, and a failure there steps down to the
# next rung, run at that length; at most AUTO_CONFIRMATIONS long runs, after which a short rung is taken as is.
AUTO_CONFIRM = 8.0
AUTO_CONFIRMATIONS = 2


def passes(p: LadderPoint) -> bool:
    """auto_eps's test of a rung: no chain diverged, KL under its tolerance, |E theta_1^2 - exact| within
    AUTO_M2_SIGMAS standard errors."""
    return p.diverged == 0 and p.kl_ok and p.m2_error <= AUTO_M2_SIGMAS * p.m2_se


@dataclass
class AutoEps:
    """What `auto_eps` chose and the rungs it ran (largest first); passed: whether the chosen one's bias is
    under the noise, or only the smallest tried."""
    eps: float
    passed: bool
    points: list[LadderPoint]
    # short rungs that passed and were run again longer (the confirmation, which replaced them in `points`)
    superseded: list[LadderPoint] = field(default_factory=list)


def auto_eps(sampler: Sampler, *, chains: int | None = None, seed: int = 0, rungs=AUTO_RUNGS,
             progress: Callable[[float], None] | None = None) -> AutoEps:
    """The largest step size of a ladder, from 4 times the target-fitted default down to 1/16 of it, whose bias
    the ladder cannot tell from Monte Carlo noise: KL under its tolerance `kl_tol`, |E theta_1^2 - exact| within
    AUTO_M2_SIGMAS standard errors, and no diverged chain. Rungs run largest first and stop at the first that
    passes. Simulated time is the ladder's, in the target's time unit: 1 for dynamics with a momentum (friction
    C ~ 1 sets how fast a chain forgets its start), sigma^2 / SCALE_REF^2 for Langevin dynamics below SCALE_REF
    (the time a narrow target relaxes in), so a rung costs as many steps as on a preset.

    The KL is the joint law's on a two-dimensional target (tolerance: the diagnostics' noise floor + KL_SDS sd, the
    conformance suite's rule; AUTO_CHAINS_JOINT chains from exact draws, AUTO_BURN_EXACT + AUTO_TIME_EXACT time
    units), else theta_1's marginal (tolerance AUTO_KL_FACTOR times its noise; AUTO_CHAINS chains from the
    potential's start, AUTO_BURN + AUTO_TIME time units). A sampler with auxiliary variables on a two-dimensional target
confirms its pick: the passing rung is run again AUTO_CONFIRM times as long, and if that fails the next rung down
is run at that length (at most AUTO_CONFIRMATIONS long runs, unless a long run lost chains to divergence: then every
rung below is run long). `points` holds one run per eps tried, the one that
decided it (a long run where one was made; the short rung it replaced is in `superseded`); the chosen eps is the
last point's. `chains` overrides the number of chains. Needs the exact law
    of theta_1 at least (targets in one or two dimensions, and the Gaussians). `progress(fraction)` counts rungs
    out of all of them: it jumps to 1 at the first that passes."""
    from samplers.stepsize import SCALE_REF, fitted_eps, order, target_scale
    scale = target_scale(sampler.target)
    base = fitted_eps(sampler, scale)
    unit = 1.0
    if order(sampler) == 2 and scale is not None and scale < SCALE_REF:
        unit = (scale / SCALE_REF) ** 2
    joint = law_of(sampler.target) == JOINT
    burn, span = (AUTO_BURN_EXACT, AUTO_TIME_EXACT) if joint else (AUTO_BURN, AUTO_TIME)
    chains = chains or (AUTO_CHAINS_JOINT if joint else AUTO_CHAINS)
    # Langevin dynamics (theta alone) relax within the rung's units; a momentum's drift takes longer. (Not on the
    # funnel, whose unit is its neck's and whose bias builds over its width's: docs/notes/stepsize.md, not changed.)
    confirm = joint and order(sampler) == 1
    points, superseded, n = [], [], len(rungs)
    k, long, confirmations, unstable = 0, False, 0, False
    while k < n:
        eps = float(base * rungs[k])
        told = None if progress is None else (lambda f, k=k: progress((k + f) / n))
        stretch = AUTO_CONFIRM if long else 1.0
        p = step_ladder(sampler, [eps], chains=chains, seed=seed + k + (0x10000 if long else 0),
                        time=stretch * span * unit, burn_time=stretch * burn * unit,
                        samples_per_time=2.0 / unit, progress=told, exact_start=joint).points[0]
        if long and points and points[-1].eps == eps:
            superseded.append(points.pop())       # one point per eps: the run that decided it
        points.append(p)
        if passes(p):
            if long or not confirm:
                return AutoEps(eps, True, points, superseded)
            long = True          # the same rung again, longer
            continue
        if long:
            confirmations += 1
            # chains that diverged in a long run: a rare instability whose rate falls with eps, which a short rung
            # at a smaller eps is too short to see (SGRHMC on chi-feng's funnel, docs/notes/stepsize.md). So after
            # one, every rung below runs long, whatever the budget.
            unstable = unstable or p.diverged > 0
            long = confirm = unstable or confirmations < AUTO_CONFIRMATIONS
        k += 1
    return AutoEps(float(points[-1].eps), False, points, superseded)
