"""QNHMC paper (Fu, Luo & Zhang), §5.2 (Table 2) and §5.3 (Table 3): the real-model experiments, offline, at the
paper's settings, scored with the paper's metrics, and the verdicts on the paper's own claims.

* `qnhmc-logistic`: Bayesian logistic regression, digits 7 vs 9 (`digits-logistic`: scikit-learn's bundled 8x8
  digits stand in for MNIST, d = 65; the figure says so). HMC, QNHMC (L-BFGS, m = 7) and the naive quasi-Newton
  form (Eq. 4, no Metropolis test) at the paper's L = 5 and eps = 0.1 for all, full gradients, four chains from one
  far start shared by all, and a MAP baseline (scipy's L-BFGS-B from the same start; the paper's GD). Table 2's
  metrics: burn-in time (per chain, proposals until U's running median falls below its stationary level, times
  seconds per proposal), ESS per second (per chain, the median over coordinates of the second half's ESS) and test
  error (posterior predictive of the second half); the paper's rows beside ours.
* `qnhmc-pmf`: Bayesian matrix factorisation (`pmf`: synthetic ratings from a rank-10 model, truth known, stand in for
  MovieLens-1M; `QNHMC_PMF_DATA=pmf-csv:PATH` runs it on a ratings file). HMC and QNHMC (L-BFGS, m = 7, B = I to
  start) at the paper's eps = 0.01 and L = 10, with minibatches of observed entries, one batch per proposal
  (`Minibatch(per="proposal")`: each trajectory follows one sub-posterior U_S, so QNHMC learns its pairs from one
  function's gradients), both without the Metropolis test: its energy error against the exact U is the batch's
  error, hundreds in d = 2500, and rejects every proposal (docs/notes/qnhmc-models.md). Table 3's metrics: test RMSE
  and running time (per chain, seconds until its RMSE curve comes within 0.005 of the level both samplers end at).

Tuned rows follow the paper's in both: every sampler's step size chosen on one grid by one rule per table (Table 2:
the highest ESS per proposal; Table 3: the lowest held-out RMSE; tuning runs on seed + 1), the rule written in the
settings and the evidence. Each verdict is three-valued, on twice a difference's standard error over the chains
(`base.outside`, `base.within`).
"""
from __future__ import annotations

import os
import time

import numpy as np

from samplers.reproduce.base import (
    QNHMC,
    Claim,
    Outcome,
    Progress,
    decides,
    decides_within,
    mean_se,
    outside,
    parallel_map,
    reproduction,
    within,
)

L, MEMORY, CHAINS = 10, 7, 4
# Table 3 at the paper's settings: eps = 0.01 for every HMC method, L = 10, L-BFGS memory 7, B = I to start
PMF_EPS, PMF_B0 = 0.01, 1.0
PMF_NEAR = 0.005          # "converged": a chain's RMSE within this of the level both samplers end at
PMF_COMPARABLE = 0.005    # "comparable" RMSEs: within this of each other
# the ratings: the synthetic `pmf` preset stands in for MovieLens-1M; anyone with MovieLens on disk sets
# QNHMC_PMF_DATA=pmf-csv:ratings.csv (rows user,item,rating; docs/notes/qnhmc-models.md)
PMF_DATA = os.environ.get("QNHMC_PMF_DATA", "pmf")
# Table 3 of the paper: RMSE and running time (s)
PAPER_TABLE3 = {"MAP": (0.8701, 27.67), "HMC": (0.8607, 202.5), "QNHMC": (0.8628, 108.34),
                "HMC-BFGS": (0.8618, 179.23)}
FAR = 3.0                 # the logistic chains start at FAR * N(0, I), far from the mode, so the curves show burn-in
PMF_BATCH = 0.1           # share of the observed entries in a minibatch
LABELS = {"hmc": "HMC", "qnhmc": "QNHMC (L-BFGS, m = 7)", "qnhmc-naive": "naive QNHMC (Eq. 4, no MH)",
          "map": "MAP (scipy L-BFGS-B)"}


def window_mean(x: np.ndarray) -> np.ndarray:
    """Row k of the result: the mean of rows k//2 .. k of x (the second half of the samples so far)."""
    c = np.concatenate([np.zeros((1,) + x.shape[1:]), np.cumsum(x, axis=0)])
    k = np.arange(1, len(x) + 1)
    lo = (k - 1) // 2
    return (c[k] - c[lo]) / (k - lo).reshape((-1,) + (1,) * (x.ndim - 1))


def first_reach(x: np.ndarray, level: float, above: bool = True) -> int | None:
    """Index of the first entry at or beyond `level` (None if never)."""
    hit = x >= level if above else x <= level
    return int(np.argmax(hit)) if hit.any() else None


def _chain_trace(pot, name, oracle, eps, steps, seed, theta0, record, **params):
    """Run CHAINS chains of `name` for `steps` proposals; record(theta) -> a row per proposal."""
    from samplers.registry import make_sampler
    from samplers.run import Ensemble
    extra = {"memory": MEMORY} if name.startswith("qnhmc") else {}
    s = make_sampler(name, pot, oracle, eps=eps, L=L, **extra, **params)
    ens = Ensemble(s, CHAINS, seed=seed, theta0=theta0)
    rows, seconds = [], np.empty(steps)
    t0 = time.perf_counter()
    for k in range(steps):
        ens.advance(1)
        seconds[k] = time.perf_counter() - t0
        rows.append(record(ens.theta))
    return np.array(rows), seconds, ens.stats.acceptance_rate, ens.n_diverged


# ----------------------------------------------------------------------------------
# §5.2: logistic regression, at the paper's settings: L = 5, eps = 0.1 for every sampler, L-BFGS memory 7
# ----------------------------------------------------------------------------------
LOGISTIC_L, LOGISTIC_EPS = 5, 0.1
# Table 2 of the paper (MNIST 7 vs 9, d = 784): burn-in time (s), ESS per second, test error
PAPER_TABLE2 = {"HMC": (64.0, 0.286, 0.0493), "HMC-BFGS": (36.0, 0.418, 0.0501), "QNHMC": (17.0, 1.30, 0.0496),
                "GD": (None, None, 0.0578)}
BAND = 0.995     # burn-in ends when U's running median first falls below this quantile of its stationary law


def _far_start(dim: int, seed: int) -> np.ndarray:
    return FAR * np.random.default_rng(1000 + seed).standard_normal(dim)


def _map(pot, theta0, budget=None, record=None):
    """scipy's L-BFGS-B on U from theta0 (record(w) called at every function-and-gradient evaluation)."""
    from scipy.optimize import minimize

    def fun(w):
        if record is not None:
            record(w)
        return float(pot.U(w[None])[0]), pot.grad(w[None])[0]
    opts = dict(gtol=1e-10) if budget is None else dict(maxfun=budget, maxiter=budget, gtol=1e-10)
    return minimize(fun, theta0, jac=True, method="L-BFGS-B", options=opts)


def burn_in_level(pot, theta0) -> float:
    """U's level where burn-in ends: U at the mode plus the BAND quantile of chi2_d / 2, U's stationary law under
    the Laplace approximation (the posterior of a logistic regression with a Gaussian prior is close to it)."""
    from scipy import stats
    return float(_map(pot, theta0).fun + stats.chi2(pot.dim).ppf(BAND) / 2)


def burn_in(u: np.ndarray, level: float) -> int:
    """Proposals until U (one chain's trace), smoothed by a running median of WINDOW, first falls below level."""
    from scipy.ndimage import median_filter
    inside = median_filter(u, size=WINDOW, mode="nearest") <= level
    return int(np.argmax(inside)) + 1 if inside.any() else len(u)


WINDOW = 11      # a running median over this many proposals: one lucky proposal does not end burn-in


def _logistic_job(job):
    from samplers import diagnostics as dg
    from samplers.gradients import ExactGradient
    from samplers.registry import make_sampler
    from samplers.run import Ensemble
    from samplers.targets.models import classification_scores, digits_logistic, predictive
    name, seed, steps, eps = job if len(job) == 4 else (*job, LOGISTIC_EPS)
    pot = digits_logistic()
    data, theta0, d = pot.data, _far_start(pot.dim, seed), pot.dim
    if name == "map":
        return _map_trace(pot, theta0, steps * (LOGISTIC_L + 1))
    extra = {"memory": MEMORY} if name.startswith("qnhmc") else {}
    s = make_sampler(name, pot, ExactGradient(pot), eps=eps, L=LOGISTIC_L, **extra)
    ens = Ensemble(s, CHAINS, seed=seed, theta0=theta0)
    thetas, seconds = np.empty((steps, CHAINS, d)), np.empty(steps)
    t0 = time.perf_counter()
    for k in range(steps):
        ens.advance(1)
        seconds[k] = time.perf_counter() - t0
        thetas[k] = ens.theta
    per_proposal = seconds[-1] / steps
    u = pot.U(thetas.reshape(-1, d)).reshape(steps, CHAINS)
    level = burn_in_level(pot, theta0)
    burn = np.array([burn_in(u[:, c], level) for c in range(CHAINS)])
    half = steps // 2
    # ESS of each coordinate over the second half, per chain (their spread is the estimate's error), median over
    # the coordinates; per second of the time those samples took
    ess = np.array([np.median(dg.ess_per_dim(thetas[half:, c:c + 1, :])) for c in range(CHAINS)])
    probs = np.array([predictive(data, th).mean(0) for th in thetas])          # (steps, n_test)
    curve = np.array([classification_scores(data, p) for p in window_mean(probs)])
    return dict(name=name, eps=eps, grads=(LOGISTIC_L + 1) * np.arange(1, steps + 1), error=curve[:, 0],
                loglik=curve[:, 1],
                seconds=seconds[-1], per_proposal=per_proposal, burn=burn, burn_s=burn * per_proposal,
                ess=ess, ess_per_s=ess / (per_proposal * (steps - half)), level=level,
                n_test=len(data.y_test), errors=int(round(curve[-1, 0] * len(data.y_test))),
                acceptance=ens.stats.acceptance_rate, diverged=ens.n_diverged)


def _map_trace(pot, theta0, budget):
    """scipy's L-BFGS-B on U from the same start, scored after every function-and-gradient evaluation."""
    from samplers.targets.models import classification_scores, predictive
    scores = []
    t0 = time.perf_counter()
    _map(pot, theta0, budget, lambda w: scores.append(classification_scores(pot.data, predictive(pot.data,
                                                                                                 w[None])[0])))
    scores = np.array(scores)
    return dict(name="map", grads=np.arange(1, len(scores) + 1), error=scores[:, 0], loglik=scores[:, 1],
                seconds=time.perf_counter() - t0, acceptance=float("nan"), diverged=0,
                n_test=len(pot.data.y_test), errors=int(round(scores[-1, 0] * len(pot.data.y_test))))


# Tuned rows follow the paper's: every sampler's step size chosen on one grid by one rule per table, from tuning
# runs on their own random stream (seed + 1), and the chosen samplers then rerun as the paper's rows are.
TUNE_GRID = (0.025, 0.05, 0.1, 0.2, 0.4)
LOGISTIC_RULE = ("the ε of the grid {grid} with the highest ESS per proposal (each costs L + 1 gradients for every "
                 "sampler; mean over chains; not per second, which the machine's load moves) in a tuning run of "
                 "{steps} proposals on seed + 1, runs with a divergent chain left out")
PMF_GRID = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
PMF_RULE = ("the ε of the grid {grid} with the lowest held-out RMSE (Table 3's metric) at the end of a tuning run of "
            "{steps} proposals on seed + 1, runs with a divergent chain or a non-finite RMSE left out")


def tune(job, names, grid, seed, steps, score, label, lower: bool = False) -> dict:
    """{name: (chosen eps, {eps: score})}: each sampler's grid run by `job((name, seed + 1, steps, eps))`, the eps
    with the highest score(result) kept (the lowest with `lower`); a diverged or non-finite run never wins."""
    cells = [(n, e) for n in names for e in grid]
    results = parallel_map(job, [(n, seed + 1, steps, e) for n, e in cells], Progress(label, len(cells)))
    worst = np.inf if lower else -np.inf
    scores: dict = {n: {} for n in names}
    for (n, e), r in zip(cells, results):
        v = float(score(r)) if not r["diverged"] else worst
        scores[n][e] = v if np.isfinite(v) else worst
    pick = min if lower else max
    return {n: (pick(scores[n], key=scores[n].get), scores[n]) for n in names}


def _tuned_note(tuned, fmt=".3g") -> str:
    return "; ".join(f"{LABELS[n]}: ε = {e:g} (" + ", ".join(f"{k:g}: {format(v, fmt)}" for k, v in sc.items()) + ")"
                     for n, (e, sc) in tuned.items())


@reproduction("qnhmc-logistic", "QNHMC paper Table 2: Bayesian logistic regression, digits 7 vs 9",
              "Fu, Luo & Zhang, Quasi-Newton HMC, Sec. 5.2, Table 2 (MNIST 7 vs 9; here scikit-learn's 8x8 digits)",
              QNHMC)
def qnhmc_logistic(seed: int = 0, full: bool = False, quick: bool = False) -> Outcome:
    import matplotlib.pyplot as plt
    steps = 8000 if full else 400 if quick else 3000
    names = ["hmc", "qnhmc", "qnhmc-naive", "map"]
    results = {r["name"]: r for r in parallel_map(_logistic_job, [(n, seed, steps) for n in names],
                                                   Progress("qnhmc-logistic", len(names)))}
    h, q = results["hmc"], results["qnhmc"]
    # tuned rows: one rule for every sampler (LOGISTIC_RULE), then each rerun at its chosen step as above
    samplers = names[:-1]
    grid, tune_steps = ((0.05, 0.1, 0.2), 100) if quick else (TUNE_GRID, 500)
    tuned = tune(_logistic_job, samplers, grid, seed, tune_steps, lambda r: r["ess"].mean(),
                 "qnhmc-logistic tune")
    rule = LOGISTIC_RULE.format(grid=", ".join(f"{e:g}" for e in grid), steps=tune_steps)
    again = parallel_map(_logistic_job, [(n, seed, steps, tuned[n][0]) for n in samplers],
                         Progress("qnhmc-logistic tuned", len(samplers)))
    at_tuned = {r["name"]: r for r in again}

    rows = []
    for n, r in [(n, results[n]) for n in names] + [(f"{n} tuned", at_tuned[n]) for n in samplers]:
        base_name = n.split()[0]
        sampler = base_name != "map"
        label = LABELS[base_name] + (f", tuned ε = {r['eps']:g}" if n.endswith("tuned") else "")
        rows.append(dict(method=label, eps=r.get("eps", "") if sampler else "",
                         proposals=steps if sampler else "", grad_evals=int(r["grads"][-1]),
                         burn_in=float(r["burn"].mean()) if sampler else "",
                         burn_in_s=float(r["burn_s"].mean()) if sampler else "",
                         ess_median=float(r["ess"].mean()) if sampler else "",
                         ess_per_s=float(r["ess_per_s"].mean()) if sampler else "",
                         test_error=float(r["error"][-1]), test_loglik=float(r["loglik"][-1]),
                         acceptance=r["acceptance"], diverged=r["diverged"], seconds=r["seconds"]))
    for label, (b, e, err) in PAPER_TABLE2.items():
        rows.append(dict(method=f"paper: {label} (MNIST)", burn_in_s=b if b is not None else "",
                         ess_per_s=e if e is not None else "", test_error=err))

    fig, axs = plt.subplots(1, 2, figsize=(12, 4.4))
    colors = {"hmc": "tab:blue", "qnhmc": "tab:red", "qnhmc-naive": "tab:gray", "map": "tab:green"}
    for n in names:
        r = results[n]
        axs[0].plot(r["grads"], r["loglik"], color=colors[n], label=LABELS[n], lw=1.2)
        axs[1].plot(r["grads"], r["error"], color=colors[n], label=LABELS[n], lw=1.2)
    for n in ("hmc", "qnhmc"):
        axs[0].axvline((LOGISTIC_L + 1) * results[n]["burn"].mean(), color=colors[n], ls=":", lw=1,
                       label=f"{LABELS[n]}: end of burn-in")
    for ax, lab in zip(axs, ("mean test log-likelihood", "test error")):
        ax.set_xscale("log")
        ax.set_xlabel("gradient evaluations (per chain)")
        ax.set_ylabel(lab)
    axs[0].set_ylim(max(-1.0, float(min(r["loglik"][len(r["loglik"]) // 20:].min() for r in results.values()))),
                    0.02)
    axs[0].legend(fontsize=8, loc="lower right")
    axs[0].set_title("test log-likelihood of the posterior predictive\n(samples k/2..k, all chains)", fontsize=10)
    axs[1].set_title("test error", fontsize=10)
    pot_n = _digits_sizes()
    fig.suptitle(f"DATA SUBSTITUTE: scikit-learn's 8x8 digits stand in for MNIST (7 vs 9, d = 65, {pot_n[0]} train / "
                 f"{pot_n[1]} test; the paper: d = 784, 12214 / 2037)\nthe paper's settings: L = {LOGISTIC_L}, "
                 f"ε = {LOGISTIC_EPS} for all, L-BFGS m = {MEMORY}; {CHAINS} chains each from {FAR:g}·N(0, I), "
                 f"seed {seed}", fontsize=10)
    fig.tight_layout()

    bayes = min(h["errors"], q["errors"])
    n_test = h["n_test"]
    claims = _speed_claims(h, q, steps, pot_n[2], "", " (Table 2: 17 s against 64 s)",
                           " (Table 2: 1.30 against 0.286)")
    claims += [
        Claim("The Bayesian samplers' test error is below the optimiser's (Table 2: HMC 0.0493, QNHMC 0.0496 "
              "against GD 0.0578)",
              None if bayes == results["map"]["errors"] else bayes < results["map"]["errors"],
              f"test errors on {n_test} test digits: HMC {h['errors']}, QNHMC {q['errors']}, MAP (L-BFGS-B) "
              f"{results['map']['errors']} (posterior predictive of the second half's samples; MAP's plug-in)",
              decides=f"a difference of at least one test error: on these {n_test} digits every method classifies "
                      f"as well as the others when they tie; MNIST's 2037 test digits separate them")]
    claims += _speed_claims(at_tuned["hmc"], at_tuned["qnhmc"], steps, pot_n[2], "At tuned step sizes, ", "", "",
                            rule)
    settings = dict(potential="digits-logistic (DATA SUBSTITUTE for MNIST: scikit-learn's 8x8 digits)",
                    features="pixels / 16, standardised on the training split, and an intercept", prior="N(0, I)",
                    chains=CHAINS, proposals=steps, L=LOGISTIC_L, eps=LOGISTIC_EPS, memory=MEMORY,
                    qnhmc="the lab's QNHMC (L-BFGS, m = 7) with its defaults otherwise",
                    start=f"{FAR:g}·N(0, I) (rng 1000 + seed) for all",
                    burn_in=f"per chain: proposals until the running median of {WINDOW} of U first falls below "
                            f"U(MAP) + χ²_d({BAND})/2 (the Laplace approximation's {BAND} quantile), times seconds "
                            f"per proposal", ess="per chain, each coordinate's ESS (Stan's estimator) over the "
                            "second half, median over coordinates", test_error="posterior predictive of the "
                            "second half's samples, all chains", map="scipy.optimize L-BFGS-B, jac=True",
                    tuned=f"rows after the paper's: {rule}; chosen: {_tuned_note(tuned)}", seed=seed)
    return Outcome(rows, claims, fig, settings,
                   paper="Table 2 (MNIST): burn-in time HMC 64 s, HMC-BFGS 36 s, QNHMC 17 s; ESS per second 0.286, "
                         "0.418, 1.30; test error 0.0493, 0.0501, 0.0496, GD 0.0578")


def _speed_claims(h, q, steps, dim, prefix, burn_paper, ess_paper, rule: str = "") -> list:
    """Table 2's burn-in and ESS-per-second claims on two result sets (HMC's and QNHMC's), each three-valued on
    twice its difference's standard error over chains."""
    # burn-in times are positive and skewed (one chain of four may take a hundred times another): compared as the
    # log of their ratio, each sampler's mean log over chains, with twice that difference's standard error
    (hb, hb_se), (qb, qb_se) = mean_se(np.log(h["burn_s"])), mean_se(np.log(q["burn_s"]))
    (he, he_se), (qe, qe_se) = mean_se(h["ess_per_s"]), mean_se(q["ess_per_s"])
    tol_b, tol_e = 2 * np.hypot(hb_se, qb_se), 2 * np.hypot(he_se, qe_se)
    at = f" (QNHMC ε = {q['eps']:g}, HMC ε = {h['eps']:g}, each chosen by {rule})" if rule else ""
    return [
        Claim(f"{prefix}QNHMC needs less burn-in time than HMC{burn_paper}",
              outside(hb - qb, tol_b),
              f"seconds until U's running median of {WINDOW} first falls below the mode's U + the {BAND} quantile "
              f"of χ²_d/2, geometric mean over {CHAINS} chains: QNHMC {np.exp(qb):.3g} s, HMC {np.exp(hb):.3g} s; "
              f"log of HMC's over QNHMC's {hb - qb:+.2f} against twice its standard error {tol_b:.2f}; "
              f"mean proposals QNHMC {q['burn'].mean():.0f}, HMC {h['burn'].mean():.0f}; "
              f"each chain's proposals QNHMC {', '.join(map(str, q['burn']))}, HMC {', '.join(map(str, h['burn']))} "
              f"(a chain that never gets there counts the whole run, {steps}); "
              f"seconds per proposal QNHMC {1e3 * q['per_proposal']:.2f} ms, HMC {1e3 * h['per_proposal']:.2f} ms"
              + at,
              decides=decides("log(HMC's burn-in / QNHMC's)", tol_b)),
        Claim(f"{prefix}QNHMC draws more effective samples per second than HMC{ess_paper}",
              outside(qe - he, tol_e),
              f"median over the {dim} coordinates of each chain's ESS over the second half ({steps - steps // 2} "
              f"proposals), per second those samples took, mean over chains ± standard error: QNHMC {qe:.3g} ± "
              f"{qe_se:.2g}/s (ESS {q['ess'].mean():.0f}), HMC {he:.3g} ± {he_se:.2g}/s (ESS {h['ess'].mean():.0f})"
              + at,
              decides=decides("QNHMC − HMC", tol_e, "/s", ".2g"))]


def _digits_sizes():
    from samplers.targets.presets import get_potential
    pot = get_potential("digits-logistic")
    return pot.data.n, len(pot.data.y_test), pot.dim


# ----------------------------------------------------------------------------------
# §5.3: matrix factorisation
# ----------------------------------------------------------------------------------
def _pmf_job(job):
    from samplers.gradients import Minibatch
    from samplers.targets.presets import get_potential
    name, seed, steps, eps = job if len(job) == 4 else (*job, PMF_EPS)
    pot = get_potential(PMF_DATA)
    data = pot.data
    batch = max(1, int(PMF_BATCH * data.n))
    oracle = Minibatch(pot, batch, per="proposal")
    extra = {"B0": PMF_B0} if name == "qnhmc" else {}
    preds, seconds, acc, div = _chain_trace(
        pot, name, oracle, eps, steps, seed, pot.start,
        lambda th: data.predict(th, data.test_users, data.test_items), metropolis="off", **extra)
    mean = window_mean(preds.mean(1))          # all chains' posterior mean
    rmse = np.array([data.rmse(p) for p in mean])
    truth = np.array([data.truth_rmse(p) for p in mean]) if data.truth is not None else np.full(steps, np.nan)
    # each chain's own curve: their spread is the Monte Carlo error of the times and RMSEs compared
    per_chain = np.array([[data.rmse(p) for p in window_mean(preds[:, c])] for c in range(CHAINS)])
    # a proposal reads L + 1 batches, and the whole data set twice: the proposal reports its energy error with the
    # exact U at both ends (StepInfo), though no Metropolis test uses it here
    passes = np.arange(1, steps + 1) * ((L + 1) * batch / data.n + 2)
    return dict(name=name, eps=eps, seconds=seconds, passes=passes, rmse=rmse, truth=truth, per_chain=per_chain,
                acceptance=acc, diverged=div, batch=batch)


def value_at(times: np.ndarray, values: np.ndarray, t: float) -> float:
    """The curve's value at its last point no later than t."""
    return float(values[max(int(np.searchsorted(times, t, side="right")) - 1, 0)])


def _pmf_claims(h, q, steps, dim, prefix, same_paper, fast_paper, rule: str = ""):
    """Table 3's claims on two result sets (HMC's and QNHMC's): comparable RMSE, and QNHMC converging faster; the
    chains' times to converge."""
    # the paper's Table 3 claim: comparable RMSE, QNHMC converging faster (108 s against HMC's 202 s). "Converged":
    # the first second at which a chain's RMSE curve comes within PMF_NEAR of the level both samplers end at
    # (a chain's curve is its own posterior mean: one chain's, so above the pooled curve; the level is the higher
    # of the two samplers' mean final per-chain RMSE; a chain that never reaches it counts its whole run, a bound)
    level = max(float(h["per_chain"][:, -1].mean()), float(q["per_chain"][:, -1].mean())) + PMF_NEAR

    def reach_seconds(r):
        return np.array([r["seconds"][int(np.argmax(c <= level))] if (c <= level).any() else r["seconds"][-1]
                         for c in r["per_chain"]])
    th, tq = reach_seconds(h), reach_seconds(q)
    never = {n: int(sum(not (c <= level).any() for c in r["per_chain"])) for n, r in (("hmc", h), ("qnhmc", q))}
    t_eq = min(h["seconds"][-1], q["seconds"][-1])
    at = {n: value_at(r["seconds"], r["rmse"], t_eq) for n, r in (("hmc", h), ("qnhmc", q))}
    eps = f" (QNHMC ε = {q['eps']:g}, HMC ε = {h['eps']:g}, each chosen by {rule})" if rule else ""
    (mh, se_h), (mq, se_q) = mean_se(th), mean_se(tq)
    tol_t = 2 * np.hypot(se_h, se_q)
    gap = float(q["rmse"][-1] - h["rmse"][-1])
    tol_r = 2 * float(np.hypot(*(r["per_chain"][:, -1].std(ddof=1) / np.sqrt(CHAINS) for r in (h, q))))
    comparable = within(gap, tol_r, PMF_COMPARABLE)
    claims = [
        Claim(f"{prefix}QNHMC's test RMSE is comparable to HMC's{same_paper}",
              comparable,
              f"after {steps} proposals: QNHMC {q['rmse'][-1]:.4f}, HMC {h['rmse'][-1]:.4f} on held-out ratings, a gap "
              f"of {gap:+.4f} against twice its standard error from the {CHAINS} chains' own curves, {tol_r:.4f} "
              f"(each chain's own final RMSE: QNHMC {', '.join(f'{v:.3f}' for v in q['per_chain'][:, -1])}, HMC "
              f"{', '.join(f'{v:.3f}' for v in h['per_chain'][:, -1])}); "
              f"comparable means within {PMF_COMPARABLE} (the paper's HMC-family RMSEs lie within 0.0021, MAP "
              f"0.0094 above them); at equal time ({t_eq:.1f} s) QNHMC {at['qnhmc']:.4f}, HMC {at['hmc']:.4f}" + eps,
              decides=decides_within("gap", tol_r, PMF_COMPARABLE)),
        Claim(f"{prefix}QNHMC converges faster than HMC{fast_paper}",
              outside(mh - mq, tol_t),
              f"seconds until each chain's own test RMSE curve first comes within {PMF_NEAR} of the level both end "
              f"at ({level:.4f}), mean over {CHAINS} chains ± standard error: QNHMC {mq:.1f} ± {se_q:.1f} s, HMC "
              f"{mh:.1f} ± {se_h:.1f} s (chains that never reach it, counted at the run's end: QNHMC "
              f"{never['qnhmc']}, HMC {never['hmc']}); seconds per proposal QNHMC "
              f"{q['seconds'][-1] / steps * 1e3:.1f} ms, HMC {h['seconds'][-1] / steps * 1e3:.1f} ms (the L-BFGS "
              f"two-loop recursion in d = {dim})" + eps,
              decides=decides("HMC − QNHMC", tol_t, " s", ".1f"))]
    return claims, (th, tq)


@reproduction("qnhmc-pmf", "QNHMC paper Table 3: Bayesian matrix factorisation with minibatches",
              "Fu, Luo & Zhang, Quasi-Newton HMC, Sec. 5.3, Table 3 (here synthetic rank-10 ratings, truth known)",
              QNHMC)
def qnhmc_pmf(seed: int = 0, full: bool = False, quick: bool = False) -> Outcome:
    import matplotlib.pyplot as plt

    from samplers.targets.presets import get_potential
    steps = 10_000 if full else 150 if quick else 3000
    names = ["hmc", "qnhmc"]
    results = {r["name"]: r for r in parallel_map(_pmf_job, [(n, seed, steps) for n in names],
                                                   Progress("qnhmc-pmf", len(names)))}
    data = get_potential(PMF_DATA).data
    h, q = results["hmc"], results["qnhmc"]
    t_eq = min(h["seconds"][-1], q["seconds"][-1])
    at = {n: value_at(results[n]["seconds"], results[n]["rmse"], t_eq) for n in names}
    at_truth = {n: value_at(results[n]["seconds"], results[n]["truth"], t_eq) for n in names}
    rows = [dict(method=LABELS[n], proposals=steps, data_passes=float(results[n]["passes"][-1]),
                 test_rmse=float(results[n]["rmse"][-1]), truth_rmse=float(results[n]["truth"][-1]),
                 acceptance=results[n]["acceptance"], diverged=results[n]["diverged"],
                 seconds=float(results[n]["seconds"][-1]), rmse_at_equal_time=at[n],
                 truth_rmse_at_equal_time=at_truth[n]) for n in names]

    fig, axs = plt.subplots(1, 2, figsize=(12, 4.4))
    colors = {"hmc": "tab:blue", "qnhmc": "tab:red"}
    for n in names:
        r = results[n]
        axs[0].plot(r["seconds"], r["rmse"], color=colors[n], label=f"{LABELS[n]}: held-out ratings")
        axs[0].plot(r["seconds"], r["truth"], color=colors[n], ls="--", label=f"{LABELS[n]}: noise-free truth")
        axs[1].plot(r["passes"], r["rmse"], color=colors[n], label=LABELS[n])
    axs[0].axvline(t_eq, color="0.5", ls=":", lw=1, label="equal time")
    axs[0].axhline(np.sqrt(data.noise_var), color="0.6", lw=0.8, label="noise sd (best possible on ratings)")
    axs[0].set_xlabel("seconds (this machine)")
    axs[1].set_xlabel("data passes (entries read / N)")
    for ax in axs:
        ax.set_ylabel("test RMSE")
        ax.set_xscale("log")
        ax.legend(fontsize=8)
    axs[0].set_title("test RMSE of the posterior mean (samples k/2..k, all chains)", fontsize=10)
    axs[1].set_title("against held-out ratings, per data pass", fontsize=10)
    what = ("DATA SUBSTITUTE: synthetic rank-10 ratings (truth known) stand in for MovieLens-1M"
            if PMF_DATA == "pmf" else f"ratings from {PMF_DATA}")
    fig.suptitle(f"{what}; PMF, {data.n_users} users x {data.n_items} items, rank {data.rank} (d = {data.dim}), "
                 f"{data.n} training ratings\nthe paper's settings: ε = {PMF_EPS} for both, L = {L}, L-BFGS m = "
                 f"{MEMORY}; minibatches of {h['batch']} (one per proposal), {CHAINS} chains, seed {seed}", fontsize=10)
    fig.tight_layout()
    claims, (th, tq) = _pmf_claims(h, q, steps, data.dim, "", " (Table 3: 0.8628 against 0.8607)",
                                   " (Table 3: 108 s against 202 s)")
    for row, t in zip(rows, (th, tq)):
        row["running_time_s"] = float(t.mean())
    # tuned rows: one rule for both samplers (PMF_RULE), then each rerun as above, for a third of the proposals
    grid, tune_steps = ((0.01, 0.1), 30) if quick else (PMF_GRID, 100)
    tuned = tune(_pmf_job, names, grid, seed, tune_steps, lambda r: r["rmse"][-1], "qnhmc-pmf tune",
                 lower=True)
    rule = PMF_RULE.format(grid=", ".join(f"{e:g}" for e in grid), steps=tune_steps)
    short = max(steps // 3, 2)
    at_tuned = {r["name"]: r for r in parallel_map(_pmf_job, [(n, seed, short, tuned[n][0]) for n in names],
                                                    Progress("qnhmc-pmf tuned", len(names)))}
    more, (th2, tq2) = _pmf_claims(at_tuned["hmc"], at_tuned["qnhmc"], short, data.dim,
                                   "At tuned step sizes, ", "", "", rule)
    claims += more
    for n, t in zip(names, (th2, tq2)):
        r = at_tuned[n]
        rows.append(dict(method=f"{LABELS[n]}, tuned ε = {r['eps']:g}", eps=r["eps"], proposals=short,
                         data_passes=float(r["passes"][-1]), test_rmse=float(r["rmse"][-1]),
                         truth_rmse=float(r["truth"][-1]), acceptance=r["acceptance"], diverged=r["diverged"],
                         seconds=float(r["seconds"][-1]), running_time_s=float(t.mean())))
    rows += [dict(method=f"paper: {m} (MovieLens-1M)", test_rmse=r, seconds=t, running_time_s=t)
             for m, (r, t) in PAPER_TABLE3.items()]
    settings = dict(potential=f"{PMF_DATA} (DATA SUBSTITUTE for MovieLens-1M: synthetic rank-10 ratings, truth "
                              f"known; MovieLens on disk: QNHMC_PMF_DATA=pmf-csv:ratings.csv)",
                    chains=CHAINS, proposals=steps, L=L, eps=f"{PMF_EPS} for both (the paper's)", memory=MEMORY,
                    B0=f"{PMF_B0:g} (Algorithm 2's B = I)", metropolis="off (both: with minibatches the test on the "
                    "exact U rejects every proposal)",
                    batch=f"{h['batch']} of {data.n} entries, one batch per proposal", start="the potential's start "
                    "(0.1 prior sd · N(0, I), seeded) plus the sampler's 0.5·N(0, I) spread",
                    curve="posterior mean of samples k/2..k (all chains; and each chain's own)",
                    running_time=f"seconds until a chain's own RMSE curve is within {PMF_NEAR} of the higher of the "
                                 f"two samplers' mean final per-chain RMSE",
                    timing="both samplers at once, one process each",
                    tuned=f"rows after the paper's, {short} proposals each: {rule}; chosen: "
                          f"{_tuned_note(tuned, '.4f')}", seed=seed)
    return Outcome(rows, claims, fig, settings,
                   paper="Table 3 (MovieLens-1M, rank 10, ε = 0.01, L = 10): RMSE MAP 0.8701, HMC 0.8607, QNHMC "
                         "0.8628, HMC-BFGS 0.8618; running time 27.67, 202.5, 108.34, 179.23 s")
