"""Lesson 06, SGRLD: a state-dependent metric needs its Gamma term."""
from __future__ import annotations

import numpy as np
from scipy.integrate import quad

from samplers.accuracy import kl_noise_floor, score
from samplers.engine.stationarity import stationarity_residual
from samplers.registry import build_sampler
from samplers.run import run
from samplers.targets.presets import get_potential

from .common import CheckResult, chain_mean_se, result, short


def sgrld_law(which: str, potential: str = "gaussian", metric_D: float = 1.5, metric_C: float = 0.5):
    """E[theta^2] of the law 1-D SGRLD samples with D = g(theta) = metric_D sqrt|U + metric_C| and
    Gamma = g' ("recipe": exp(-U)), g'/2 (the older Riemannian term, "historical": exp(-U) g^-1/2)
    or no Gamma ("none": exp(-U) / g), by quadrature. From f p = (g p)': p'/p = -U' - (g' - Gamma)/g."""
    pot = get_potential(potential)
    power = {"recipe": 0.0, "historical": -0.5, "none": -1.0}[which]

    def weight(t):
        u = pot.U(np.array([[t]]))[0]
        return np.exp(-u) * (metric_D * np.sqrt(abs(u + metric_C))) ** power

    lo, hi = pot.box[0]
    z = quad(weight, lo, hi, limit=200)[0]
    return quad(lambda t: t * t * weight(t), lo, hi, limit=200)[0] / z


def sgrld_gamma(quick: bool = False) -> CheckResult:
    """SGRLD on the standard normal (V = 1, eps = 0.003, G^-1 = 1.5 sqrt(theta^2/2 + 0.5)): with
    Gamma the histogram matches exp(-U); with Gamma dropped the chains sample exp(-U) / g instead,
    whose E[theta^2] = 0.715 (quadrature). KL of each, E[theta^2] against both predictions, and the
    Fokker-Planck residuals."""
    chains = 1000 if quick else 4000
    s = build_sampler("sgrld", "gaussian", V=1.0)
    naive = s.with_recipe(s.recipe.with_drop({"gamma"}))
    out = {}
    for label, smp in (("with", s), ("without", naive)):
        res = run(smp, 300, chains, burn=2000, thin=2, seed=3)
        out[label] = (score(s.potential, res.theta)["kl"], kl_noise_floor(s.potential, res.theta),
                      stationarity_residual(smp.recipe, s.potential, n_grid=201).relative,
                      *chain_mean_se(res.theta[:, :, 0] ** 2))
    kl, floor, res_w, m_w, se_w = out["with"]
    kl_n, _, res_n, m_n, se_n = out["without"]
    pred_n = sgrld_law("none")
    z_n = abs(m_n - pred_n) / se_n
    tol = 3 * floor + 1e-3    # the floor plus an allowance for the discretisation at eps = 0.003
    return result(kl, tol, kl < tol and kl_n > 5 * tol and z_n < 4 and abs(m_w - 1) / se_w < 4,
                  f"KL with Γ {short(kl)} (floor {short(floor)}, tolerance {short(tol)}), without Γ {short(kl_n)}; "
                  f"E[θ²] with Γ {m_w:.3f} ± {se_w:.3f} (exact 1), without {m_n:.3f} ± {se_n:.3f} "
                  f"(predicted for e^(−U)/g: {pred_n:.3f}). Residual {short(res_w)} vs {short(res_n)}")
