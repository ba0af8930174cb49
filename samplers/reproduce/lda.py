"""Online LDA, offline: the recipe paper's §4.2 / Fig. 3 (Supplement F.2) and the SCIR paper's §4.1 / Fig. 3a.

Both follow Patterson & Teh's set-up (`samplers/targets/lda.py`): the expanded-mean topics theta (K x W) are moved
by a stochastic-gradient sampler on minibatches of 50 documents, each document's topic assignments drawn by Gibbs
sweeps given the current topics; held-out perplexity by document completion. Each chain is one run (the papers
plot three and five runs); a curve is the mean over the runs of each run's own perplexity.

* `recipe-lda`: gSGRHMC (G = diag(theta)^-1; the splitting integrator, stable where a-hat < 1/2) against SGRLD
  with its decreasing step-size schedule eps (1 + t/b)^-c, and SGLD and SGHMC with constant steps, as in the
  paper; perplexity against documents seen, on a synthetic corpus drawn from LDA with sparse topics (the true
  topics' perplexity is the floor). The paper's Wikipedia stream needs the network.
* `scir-lda`: SCIR against SGRLD, both with the schedule h (1 + m/tau)^-kappa, and the collapsed Gibbs sampler of
  the `lda` package on the whole training set as the exact, non-scalable baseline; perplexity against time on the
  Reuters sample shipped in the `lda` package (its timing counts the samplers' steps, not the scoring).

All samplers here sample one posterior (beta = 0.01 on theta, documents Dir(0.1)); the recipe paper gave SGLD and
SGHMC a flatter one. Step sizes were tuned by hand on short runs (docs/notes/lda.md).
"""
from __future__ import annotations

import time

import numpy as np

from samplers.reproduce.base import RECIPE, SCIR, Claim, Outcome, Progress, parallel_map, reproduction
from samplers.targets.lda import perplexity_of

BATCH = 50                     # documents per minibatch (both papers)
CHAINS = 3                     # independent runs per sampler
LABELS = {"sgrhmc-simplex": "gSGRHMC", "sgrld-simplex": "SGRLD", "sgld-simplex": "SGLD",
          "sghmc-simplex": "SGHMC", "scir": "SCIR", "gibbs": "collapsed Gibbs (lda package)"}
COLORS = {"sgrhmc-simplex": "tab:red", "sgrld-simplex": "tab:blue", "sgld-simplex": "tab:olive",
          "sghmc-simplex": "tab:purple", "scir": "tab:green", "gibbs": "0.3"}
# each sampler's parameters on these corpora (the step-size schedule eps (1 + t/eps_b)^-eps_c where eps_c > 0)
RECIPE_PARAMS = {
    "sgrhmc-simplex": dict(eps=0.3, integrator="splitting"),
    "sgrld-simplex": dict(eps=0.1, eps_b=30.0, eps_c=0.6),
    "sghmc-simplex": dict(eps=0.02, C=1.0),
    "sgld-simplex": dict(eps=0.01),
}
SCIR_PARAMS = {
    "scir": dict(h=0.1, eps_b=30.0, eps_c=0.6),
    "sgrld-simplex": dict(eps=0.1, eps_b=30.0, eps_c=0.6),
}


def _potential(corpus: str, seed: int):
    from samplers.targets.lda import reuters_lda, synthetic_lda
    return reuters_lda(seed=seed) if corpus == "reuters" else synthetic_lda(corpus, seed)


def _sampler_job(job):
    """Run CHAINS chains of one sampler; each run's perplexity at every `every` steps, and the steps' seconds."""
    from samplers.gradients import Minibatch
    from samplers.registry import make_sampler
    corpus, name, params, steps, every, seed = job
    pot = _potential(corpus, seed)
    s = make_sampler(name, pot, Minibatch(pot, BATCH), **params)
    rng = np.random.default_rng(seed)
    z = s.init_state(CHAINS, rng, spread=0.0)
    # every sampler starts from the same random topics
    z[:, : pot.dim] = pot.random_start(CHAINS, np.random.default_rng(40_000 + seed))
    checkpoints, predictive, seconds = [], [], []
    elapsed = 0.0
    for t in range(1, steps + 1):
        t0 = time.perf_counter()
        z, _ = s.step(z, rng, t)
        elapsed += time.perf_counter() - t0
        if t % every == 0:
            theta = z[:, : pot.dim]
            checkpoints.append(t)
            predictive.append(_predictive(pot, theta))
            seconds.append(elapsed)
    return _trace(name, checkpoints, BATCH * np.array(checkpoints), predictive, seconds)


def _gibbs_job(job):
    """The lda package's collapsed Gibbs sampler on all training documents: its topics (n_kw + beta) normalised,
    scored every `every` sweeps. Its private steps (_initialize, _sample_topics) let us score between sweeps."""
    import logging

    import lda
    logging.getLogger("lda").setLevel(logging.ERROR)     # its per-fit info lines and the empty-column warning
    corpus, _, iterations, every, seed = job
    pot = _potential(corpus, seed)
    data = pot.data
    X = document_term_matrix(data.corpus)
    model = lda.LDA(n_topics=data.topics, n_iter=iterations, alpha=data.doc_alpha, eta=data.beta,
                    random_state=seed, refresh=10 ** 9)
    state = np.random.RandomState(seed)
    rands = model._rands.copy()
    checkpoints, predictive, seconds = [], [], []
    t0 = time.perf_counter()
    model._initialize(X)
    elapsed = time.perf_counter() - t0
    for it in range(1, iterations + 1):
        t0 = time.perf_counter()
        state.shuffle(rands)
        model._sample_topics(rands)
        elapsed += time.perf_counter() - t0
        if it % every == 0:
            counts = model.nzw_ + data.beta
            pi = counts / counts.sum(1, keepdims=True)
            checkpoints.append(it)
            predictive.append(pot.topics_predictive(pi[None]))
            seconds.append(elapsed)
    return _trace("gibbs", checkpoints, data.n * np.array(checkpoints), predictive, seconds)


def _predictive(pot, theta):
    """Each run's predictive of the held-out tokens; a run that left theta > 0 (not finite) predicts nothing."""
    ok = np.isfinite(theta).all(1) & (np.abs(theta).sum(1) > 0)
    p = np.full((theta.shape[0], pot.heldout.tokens), np.nan)
    if ok.any():
        p[ok] = pot.predictive(theta[ok])
    return p


def _trace(name, checkpoints, docs, predictive, seconds):
    """A run set's curve: at checkpoint k, each run's perplexity of its posterior predictive averaged over its
    samples at checkpoints k/2..k (the second half so far, as Patterson & Teh average theirs), (checkpoints, runs).
    One sample's perplexity would punish a sampler for drawing the tiny pi_kw of words unseen in a topic that the
    posterior does hold: the predictive averages them with the draws where they are larger."""
    from samplers.reproduce.qnhmc_models import window_mean
    with np.errstate(invalid="ignore"):
        perplexity = np.nan_to_num(perplexity_of(window_mean(np.array(predictive))), nan=np.inf)
    return dict(name=name, steps=np.array(checkpoints), docs=np.asarray(docs), perplexity=perplexity,
                seconds=np.array(seconds))


def document_term_matrix(corpus) -> np.ndarray:
    """(D, W) counts of a corpus (the lda package's input)."""
    doc = np.repeat(np.arange(corpus.n), corpus.lengths)
    return np.bincount(doc * corpus.vocabulary + corpus.words, minlength=corpus.n * corpus.vocabulary
                       ).reshape(corpus.n, corpus.vocabulary).astype(np.int64)


def _job(job):
    return _gibbs_job(job) if job[1] == "gibbs" else _sampler_job(job)


def _tail_runs(r, share: float = 0.2) -> np.ndarray:
    """Each run's mean perplexity over its last `share` of checkpoints: one noisy checkpoint does not decide."""
    p = r["perplexity"]
    return p[-max(1, int(round(share * len(p)))):].mean(0)


def _tail(r, share: float = 0.2) -> float:
    return float(np.mean(_tail_runs(r, share)))


def _rows(results, names):
    rows = []
    for n in names:
        r = results[n]
        final = r["perplexity"][-1]
        rows.append(dict(method=LABELS[n], steps=int(r["steps"][-1]), docs_seen=int(r["docs"][-1]),
                         final_perplexity=float(np.mean(final)), final_min=float(np.min(final)),
                         final_max=float(np.max(final)), tail_perplexity=_tail(r),
                         seconds=float(r["seconds"][-1])))
    return rows


def _value_at(x, y, at):
    """The curve's value at its last point no later than `at`."""
    return float(y[max(int(np.searchsorted(x, at, side="right")) - 1, 0)])


# ----------------------------------------------------------------------------------
# recipe paper §4.2
# ----------------------------------------------------------------------------------
@reproduction("recipe-lda", "Recipe paper Fig. 3: online LDA, gSGRHMC against SGRLD, SGLD and SGHMC",
              "Ma, Chen & Fox 2015, Sec. 4.2, Fig. 3 and Supplement F.2 (Wikipedia stream; here a synthetic "
              "corpus drawn from LDA)", RECIPE)
def recipe_lda(seed: int = 0, full: bool = False, quick: bool = False) -> Outcome:
    import matplotlib.pyplot as plt
    corpus = "quick" if quick else "full" if full else "default"
    steps, every = (100, 10) if quick else (6000, 100) if full else (1500, 50)
    names = list(RECIPE_PARAMS)
    jobs = [(corpus, n, RECIPE_PARAMS[n], steps, every, seed) for n in names]
    results = {r["name"]: r for r in parallel_map(_job, jobs, Progress("recipe-lda", len(jobs)))}
    pot = _potential(corpus, seed)
    floor = float(perplexity_of(pot.topics_predictive(pot.truth[None]))[0])
    rows = _rows(results, names)
    g, s = results["sgrhmc-simplex"], results["sgrld-simplex"]
    g_tail, s_tail = _tail(g), _tail(s)
    # the difference's standard error from the runs' spread: a gap inside twice it is a tie, not "lower"
    se = float(np.sqrt(_tail_runs(g).var(ddof=1) / CHAINS + _tail_runs(s).var(ddof=1) / CHAINS))
    gm, sm = g["perplexity"].mean(1), s["perplexity"].mean(1)
    half = len(gm) // 2
    below = float(np.mean(gm[half:] < sm[half:]))

    fig, ax = plt.subplots(figsize=(8, 4.6))
    for n in names:
        r = results[n]
        p = np.where(np.isfinite(r["perplexity"]), r["perplexity"], np.nan)
        for c in range(p.shape[1]):
            ax.plot(r["docs"], p[:, c], color=COLORS[n], lw=0.8, alpha=0.5)
        ax.plot(r["docs"], np.nanmean(p, 1), color=COLORS[n], lw=1.8, label=LABELS[n])
    ax.axhline(floor, color="0.5", ls=":", lw=1, label="true topics")
    ax.set_xlabel("documents seen (per run)")
    ax.set_ylabel("held-out perplexity")
    finite = np.concatenate([r["perplexity"][np.isfinite(r["perplexity"])] for r in results.values()])
    ax.set_ylim(0.95 * floor, min(float(finite.max()), 3 * floor) if finite.size else 3 * floor)
    ax.legend(fontsize=8)
    data = pot.data
    ax.set_title(f"synthetic LDA: {data.n} documents, K = {data.topics}, W = {data.vocabulary}, "
                 f"minibatch {BATCH}, {CHAINS} runs each (thin lines), seed {seed}", fontsize=9)
    fig.tight_layout()

    claims = [Claim(
        "gSGRHMC reaches a lower held-out perplexity than SGRLD at equal documents seen",
        s_tail - g_tail > 2 * se,
        f"after {int(g['docs'][-1])} documents (mean over {CHAINS} runs and the last fifth of the run): "
        f"gSGRHMC {g_tail:.1f}, SGRLD {s_tail:.1f}, difference {s_tail - g_tail:.2f} against twice its standard "
        f"error from the runs' spread, {2 * se:.2f} (true topics {floor:.1f}); gSGRHMC below SGRLD at "
        f"{100 * below:.0f}% of the checkpoints of the second half; SGLD {_tail(results['sgld-simplex']):.1f}, "
        f"SGHMC {_tail(results['sghmc-simplex']):.1f}")]
    settings = dict(corpus=pot.description, batch=BATCH, runs=CHAINS, steps=steps, score_every=every,
                    params={LABELS[n]: RECIPE_PARAMS[n] for n in names},
                    gibbs_sweeps=f"{data.sweeps} per minibatch document, the last {data.sweeps - data.burn} averaged",
                    perplexity="document completion: first half of each held-out document observed, second scored",
                    start="theta ~ scale * Gamma(1, 1), the same for every sampler", seed=seed)
    return Outcome(rows, claims, fig, settings,
                   paper="Wikipedia, K = 50: gSGRHMC lowest, then SGRLD, SGHMC, SGLD (Fig. 3, curves only)")


# ----------------------------------------------------------------------------------
# SCIR paper §4.1
# ----------------------------------------------------------------------------------
@reproduction("scir-lda", "SCIR paper Fig. 3a: online LDA, SCIR against SGRLD and collapsed Gibbs",
              "Baker, Fearnhead, Fox & Nemeth 2018, Sec. 4.1, Fig. 3a and its supplement's Gibbs comparison "
              "(Wikipedia; here the Reuters sample of the lda package)", SCIR)
def scir_lda(seed: int = 0, full: bool = False, quick: bool = False) -> Outcome:
    import matplotlib.pyplot as plt
    corpus = "quick" if quick else "reuters"
    steps, every, sweeps = (100, 10, 40) if quick else (1000, 50, 200) if full else (200, 20, 60)
    names = list(SCIR_PARAMS)
    jobs = [(corpus, n, SCIR_PARAMS[n], steps, every, seed) for n in names]
    jobs.append((corpus, "gibbs", sweeps, max(1, sweeps // 12), seed))
    results = {r["name"]: r for r in parallel_map(_job, jobs, Progress("scir-lda", len(jobs)))}
    pot = _potential(corpus, seed)
    names.append("gibbs")
    rows = _rows(results, names)
    c, s = results["scir"], results["sgrld-simplex"]
    t_eq = min(c["seconds"][-1], s["seconds"][-1])
    at = {n: _value_at(results[n]["seconds"], results[n]["perplexity"].mean(1), t_eq) for n in names}
    c_tail, s_tail = _tail(c), _tail(s)

    fig, axs = plt.subplots(1, 2, figsize=(12, 4.4))
    for n in names:
        r = results[n]
        p = r["perplexity"]
        axs[0].plot(r["seconds"], p.mean(1), color=COLORS[n], lw=1.8, label=LABELS[n])
        if n != "gibbs":
            for k in range(p.shape[1]):
                axs[1].plot(r["docs"], p[:, k], color=COLORS[n], lw=0.8, alpha=0.5)
            axs[1].plot(r["docs"], p.mean(1), color=COLORS[n], lw=1.8, label=LABELS[n])
    axs[0].axvline(t_eq, color="0.5", ls=":", lw=1, label="equal time")
    axs[0].set_xlabel("seconds of sampling (this machine, scoring excluded)")
    axs[1].set_xlabel("documents seen (per run)")
    for ax in axs:
        ax.set_ylabel("held-out perplexity")
        ax.legend(fontsize=8)
    data = pot.data
    fig.suptitle(f"{'synthetic LDA' if quick else 'Reuters (lda package)'}: {data.n} documents, K = {data.topics}, "
                 f"W = {data.vocabulary}, minibatch {BATCH}, {CHAINS} runs; Gibbs on all documents, seed {seed}",
                 fontsize=10)
    fig.tight_layout()
    claims = [Claim(
        "SCIR's held-out perplexity is at least as good as SGRLD's at equal time",
        at["scir"] <= at["sgrld-simplex"],
        f"at {t_eq:.1f} s of sampling: SCIR {at['scir']:.1f}, SGRLD {at['sgrld-simplex']:.1f} (collapsed Gibbs "
        f"{at['gibbs']:.1f}); at equal documents ({int(c['docs'][-1])}, last fifth of the run) SCIR {c_tail:.1f}, "
        f"SGRLD {s_tail:.1f}; seconds per step SCIR {1e3 * c['seconds'][-1] / steps:.0f} ms, SGRLD "
        f"{1e3 * s['seconds'][-1] / steps:.0f} ms")]
    settings = dict(corpus=pot.description, batch=BATCH, runs=CHAINS, steps=steps, score_every=every,
                    params={LABELS[n]: SCIR_PARAMS[n] for n in SCIR_PARAMS},
                    gibbs=f"lda.LDA collapsed Gibbs, {sweeps} sweeps over all training documents, "
                          f"topics (n_kw + beta) normalised",
                    timing="each sampler in its own process, two at a time; scoring excluded", seed=seed)
    return Outcome(rows, claims, fig, settings,
                   paper="Wikipedia, K = 100: SCIR keeps descending where SGRLD levels off (Fig. 3a, curves only)")
