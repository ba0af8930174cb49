"""SGLD-CV against SGLD at equal gradient evaluations (Baker, Fearnhead, Fox & Nemeth 2019, "Control variates for
stochastic gradient MCMC", §4: logistic regression, KS against a long exact run).

The posterior is `logistic-5d`: 5 weights, N = 10^4 points drawn with a fixed seed (samplers/targets/data.py).
Each sampler gets the same budget of per-example gradient evaluations per chain. SGLD-CV pays for its mode
(L-BFGS-B's full-data passes) and its table of the mode's per-example gradients out of it, charged to every chain
(as if each chain had run alone); both start at the mode, as Baker et al. do. Each runs at every step size of a
grid (multiples of the posterior's smallest variance); the score is the mean over the weights of the KS distance
of the kept samples (the last 90 % of steps) from the reference sample (samplers/refsample.py, HMC with Metropolis,
cached on disk), with its error bar from both sides' ESS (accuracy.marginal_distances). Printed: each at its best
step size (chosen at seed 0), then each at its chosen step size at REPEATS fresh seeds: their mean and standard
error, the ratio SGLD / SGLD-CV, and whether the difference is more than twice its standard error.

    python benchmarks/sgld_cv.py [--n 10000] [--batch 100] [--budget 1000000] [--chains 20]
"""
from __future__ import annotations

import argparse

import numpy as np

from samplers.accuracy import effective_size, marginal_distances
from samplers.gradients import make_oracle
from samplers.refsample import reference_sample
from samplers.registry import make_sampler
from samplers.run import Ensemble
from samplers.targets.data import logistic_5d

GRID = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)    # eps in units of the posterior's smallest variance
KEEP_EVERY = 10
REPEATS = 4


def ks_at_budget(pot, ref, estimator: str, batch: int, budget: int, eps: float, chains: int, seed: int) -> dict:
    """SGLD with the named estimator run until `budget` per-example gradients per chain are spent (setup
    included); its mean KS over the weights against the reference, with the error bar of that mean."""
    # the potential's start is its mode already (Newton, when it was built): CV searches from 0 and pays for it
    options = dict(start=np.zeros(pot.dim)) if estimator == "cv" else {}
    oracle = make_oracle(pot, batch=batch, estimator=estimator, **options)
    per_step = batch                 # both estimators evaluate n per-example gradients a step
    steps = (budget - oracle.evaluations) // per_step
    if steps < 20:
        raise ValueError(f"a budget of {budget} leaves {estimator} {steps} steps")
    s = make_sampler("sgld", pot, oracle, eps=eps)
    ens = Ensemble(s, chains, seed)
    ens.z[:] = pot.start + 1e-3 * np.sqrt(eps) * ens.rng.standard_normal(ens.z.shape)
    burn = steps // 10
    ens.advance(burn)
    kept = (steps - burn) // KEEP_EVERY
    theta = np.empty((kept, chains, pot.dim))
    for k in range(kept):
        ens.advance(KEEP_EVERY)
        theta[k] = ens.theta
    spent = oracle.evaluations     # per chain, setup included: at most the budget
    if ens.n_diverged:
        return dict(ks=np.inf, err=0.0, noise=0.0, steps=steps, spent=spent, eps=eps)
    d = marginal_distances(theta, effective_size(theta), ref.theta, ref.ess)
    return dict(ks=float(d["ks"].mean()), err=float(d["ks_err"].mean()), noise=float(d["ks_noise"].mean()),
                steps=steps, spent=spent, eps=eps)


def best(pot, ref, estimator, batch, budget, chains, seed, grid=GRID) -> tuple[dict, list[dict]]:
    var = float(ref.draws.var(0).min())
    rows = [ks_at_budget(pot, ref, estimator, batch, budget, c * var, chains, seed) for c in grid]
    return min(rows, key=lambda r: r["ks"]), rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--budget", type=int, default=1_000_000, help="per-example gradients per chain")
    ap.add_argument("--chains", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    pot = logistic_5d(args.n)
    ref = reference_sample(pot)
    print(f"{pot.description}\nreference: {ref.theta.shape[0]} x {ref.theta.shape[1]} HMC draws, acceptance "
          f"{ref.acceptance:.2f}, ESS {ref.ess.min():.0f}-{ref.ess.max():.0f}")
    print(f"budget {args.budget:,} per-example gradients per chain, batch {args.batch}, {args.chains} chains")
    out = {}
    for est, title in (("minibatch", "SGLD"), ("cv", "SGLD-CV")):
        top, rows = best(pot, ref, est, args.batch, args.budget, args.chains, args.seed)
        out[est] = top
        for r in rows:
            print(f"  {title:8s} eps {r['eps']:.3g}: {r['steps']:6d} steps, mean KS {r['ks']:.4f} ± {r['err']:.4f} "
                  f"(exact sampling: {r['noise']:.4f})")
    rep = {}
    for est, title in (("minibatch", "SGLD"), ("cv", "SGLD-CV")):
        eps = out[est]["eps"]
        ks = np.array([ks_at_budget(pot, ref, est, args.batch, args.budget, eps, args.chains, args.seed + 1 + k)["ks"]
                       for k in range(REPEATS)])
        rep[est] = (ks.mean(), ks.std(ddof=1) / np.sqrt(REPEATS))
        print(f"{title:8s} at eps {eps:.3g}, {REPEATS} fresh seeds: mean KS {ks.mean():.4f} ± {rep[est][1]:.4f} "
              f"(each: {', '.join(f'{v:.4f}' for v in ks)})")
    (a, sa), (b, sb) = rep["minibatch"], rep["cv"]
    verdict = "SGLD-CV beats SGLD" if a - b > 2 * np.hypot(sa, sb) else "not decidable"
    print(f"ratio SGLD / SGLD-CV mean KS at equal gradient evaluations: {a / b:.2f} ({verdict} at 2 standard errors)")


if __name__ == "__main__":
    main()
