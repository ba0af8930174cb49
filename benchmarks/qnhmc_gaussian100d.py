"""QNHMC against HMC on the QNHMC paper's 100-d Gaussian (Fu, Luo & Zhang 2016, §5.1, Table 1, Fig. 1).

Target N(0, 11^T + 4I), eps = 0.01, L = 10 for both samplers, so both spend L + 1 gradient
evaluations per proposal and equal proposal counts are equal gradient budgets. All chains start
at one point far from the mode. Printed, per sampler:

* acceptance rate and gradient evaluations per chain;
* burn-in: steps until the median over chains of U(theta) stays inside the exact stationary
  band of U = chi2_100 / 2 (0.5% and 99.5% quantiles), `diagnostics.burn_in_length`;
* ESS and sum of autocorrelations (lags 1..500) of the projection onto the ones vector 1, over the
  last half of the run (the paper's 50K of 100K), with Stan's multi-chain estimator.

QNHMC runs with its defaults (update = auto, i.e. SR1 for the dense B; B0 = auto: I rescaled to
(s^T y / y^T y) I by the first pair), then with each update (sr1; bfgs = Algorithm 2's Eq. 1) from a
fixed B0 I for each --b0 value and, for BFGS, from the auto scale, and with L-BFGS (memory = 7).

    python benchmarks/qnhmc_gaussian100d.py [--chains 20] [--steps 6000] [--seed 0] [--b0 1 10]

Measured (seeds 0 and 1): burn-in HMC 1653 / 1465 proposals; QNHMC default (SR1) 101 / 98, i.e. x16.4 /
x14.9 shorter, ESS x1641 / x1750; BFGS from the auto scale 1175 / 890 (x1.4 / x1.6), from B = I
3579 / 3077 (x0.5).
"""
from __future__ import annotations

import argparse
import os
import time

# small (chains, 100) @ (100, 100) products run ~10x slower on a threaded OpenBLAS with 2 cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from samplers import diagnostics as dg  # noqa: E402
from samplers.registry import build_sampler
from samplers.run import run  # noqa: E402
from samplers.targets.presets import get_potential  # noqa: E402


def measure(name, pot, steps, chains, seed, theta0, **params):
    s = build_sampler(name, pot, None, eps=0.01, L=10, **params)
    t0 = time.perf_counter()
    res = run(s, steps, chains, seed=seed, theta0=theta0)
    seconds = time.perf_counter() - t0
    kept, c, d = res.theta.shape
    u = pot.U_chunked(res.theta.reshape(-1, d)).reshape(kept, c)
    band = tuple(stats.chi2(d).ppf([0.005, 0.995]) / 2)
    proj = res.theta[kept // 2:].sum(axis=2)          # projection onto 1 (unnormalised: ESS is scale-free)
    return dict(name=name + ("" if not params else " " + ",".join(f"{k}={v}" for k, v in params.items())),
                acc=res.stats.acceptance_rate, grads=res.stats.grad_evals,
                burn=dg.burn_in_length(u, band=band), burn_default=dg.burn_in_length(u),
                ess=dg.ess(proj), sum_rho=dg.sum_autocorrelation(proj, min(500, proj.shape[0] - 1)),
                var1=float(proj.var() / d), seconds=seconds, diverged=res.diverged)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, default=20)
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--b0", type=float, nargs="*", default=[1.0, 10.0],
                    help="fixed initial B = B0 I (1: Algorithm 2 as printed) to compare with the default, "
                         "B = I rescaled by the first pair")
    args = ap.parse_args(argv)
    pot = get_potential("gaussian-100d")
    theta0 = 10.0 * np.random.default_rng(1000 + args.seed).standard_normal(pot.dim)
    print(f"gaussian-100d, eps = 0.01, L = 10, {args.chains} chains x {args.steps} proposals, "
          f"start U = {pot.U(theta0[None])[0]:.0f} (stationary median {stats.chi2(100).median() / 2:.1f})")
    rows = [measure("hmc", pot, args.steps, args.chains, args.seed, theta0),
            measure("qnhmc", pot, args.steps, args.chains, args.seed, theta0)]
    rows += [measure("qnhmc", pot, args.steps, args.chains, args.seed, theta0, update=u, B0=b)
             for u in ("sr1", "bfgs") for b in args.b0]
    rows += [measure("qnhmc", pot, args.steps, args.chains, args.seed, theta0, update="bfgs")]
    rows += [measure("qnhmc", pot, args.steps, args.chains, args.seed, theta0, memory=7)]
    print(f"{'sampler':26s} {'accept':>7s} {'grads/chain':>11s} {'burn-in':>8s} {'(auto band)':>11s} "
          f"{'ESS(1)':>9s} {'sum rho':>8s} {'Var(1.x)/d':>10s} {'seconds':>8s}")
    for r in rows:
        print(f"{r['name']:26s} {r['acc']:7.3f} {r['grads']:11d} {r['burn']:8d} {r['burn_default']:11d} "
              f"{r['ess']:9.1f} {r['sum_rho']:8.2f} {r['var1']:10.2f} {r['seconds']:8.1f}")
    h = rows[0]
    print(f"relative to HMC at equal gradient evaluations (exact Var(1.x)/d = d + 4 = {pot.dim + 4}):")
    for q in rows[1:]:
        ratio = h["burn"] / max(q["burn"], 1)
        print(f"  {q['name']:26s} ESS x{q['ess'] / h['ess']:8.1f}   burn-in x{ratio:6.1f} shorter")


if __name__ == "__main__":
    main()
