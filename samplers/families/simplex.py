"""Samplers for the positive line and the probability simplex (Baker, Fearnhead, Fox & Nemeth 2018).

Both samplers follow the CIR diffusion d theta = (a - theta) dt + sqrt(2 theta) dW of Eq. (2.1), whose
stationary law is Gamma(a, 1); in the recipe it is z = theta, H = U, D = diag(theta), Q = 0
(`cir_recipe`). They differ in how they move along it:

* ``scir`` draws the exact transition over a step h (Eq. 2.2, docs/errata.md E6):
  theta' = W / (2c), c = 1 / (1 - e^{-h}), W ~ noncentral chi-square(df = 2 a-hat, nonc = 2 c theta e^{-h}),
  with a-hat = alpha + (N/n) sum_{i in S} z_i redrawn from a fresh minibatch every step (Eq. 2.3,
  Algorithm 1). No discretisation error, so no boundary bias (Theorem 3.1, Corollary 3.2).
* ``sgrld-simplex`` is Patterson & Teh's SGRLD in the expanded-mean parameterisation (mirrored
  gamma prior): theta <- |theta + (eps/2)(alpha - theta + (N/n) sum_{i in S}(z_i - omega)) + sqrt(eps theta) xi|,
  an Euler-Maruyama step with the reflection |.|; the comparator of the SCIR paper (§1.3, Fig. 1-2).

* ``sgld-simplex``, ``sghmc-simplex``, ``sgrhmc-simplex`` and ``sgrhmc-simplex-naive`` are the
  expanded-mean samplers of the recipe paper's online LDA experiment (§4.2, Supplement F.2): SGLD,
  SGHMC and gSGRHMC with G(theta) = diag(theta)^-1 on z = theta or (theta, r), driven by the ordinary
  (minibatch) gradient of U(theta) = sum_j theta_j - (a_j - 1) log theta_j, mirrored at 0 as the paper
  does ("boundary reflection"). Each is a recipe with ``mirror``: theta_k <- |theta_k|, and a momentum
  r_k <- sign(theta_k) r_k with it (`mirrored_recipe`).

Mirroring and stationarity. Extend U to all of R^d by U(|theta|). Every one of these recipes commutes with
each reflection S_k: (theta_k, r_k) -> (-theta_k, -r_k): H(S z) = H(z), D(S z) = S D(z) S, Q(S z) = S Q(z) S
(D and Q hold |theta_k| and sqrt|theta_k| only), so the drift is S-equivariant and the noise S-symmetric.
Hence |theta| (with sign(theta) r) is itself a Markov process: the mirrored one. The extension is a
recipe, so its SDE leaves exp(-H(|theta|, r)) invariant, and the fold of that law, the target on theta > 0
times N(0, I) for r, is invariant for the mirrored process. Reflecting theta alone without flipping r would
break this (a chain crossing 0 would keep heading into the wall). The same argument holds for one Euler
step: the Euler kernel of an S-equivariant recipe commutes with S, so the mirrored chain is the folded
Euler chain and inherits its stationary law, folded (tests/test_simplex.py checks the equivariance, and
that chains started at the target stay there).

The gSGRHMC recipe: z = (theta, r), H = U + r.r/2, D = diag(0, G^-1) = diag(0, |theta|),
Q = [[0, -G^-1/2], [G^-1/2, 0]] with G^-1/2 = diag(sqrt|theta|); Gamma_theta = 0 and
Gamma_r_k = d sqrt|theta_k| / d theta_k = 1 / (2 sqrt theta_k) on theta > 0, so (Algorithm 1's signs, errata E1)

    r <- r - eps sqrt(theta) grad U~ + eps / (2 sqrt(theta)) - eps theta r + N(0, eps theta (2 - eps B^)),
    theta <- |theta + eps sqrt(theta) r|   (r <- -r where theta crossed 0).

In phi = 2 sqrt(theta) this is SGHMC with friction theta on the law phi^{2a-1} e^{-phi^2/4}; without Gamma
(the naive form) the force is that of phi^{2a-2} e^{-phi^2/4}: the law of theta becomes Gamma(a - 1/2),
which for a <= 1/2 (the sparse components, a = 0.1) is not a law at all, and those chains collapse to 0.
That Euler step diverges where a < 1/2: the kick (a - 1/2)/sqrt(theta) at a tiny theta. So the default,
integrator = splitting, steps the same SDE by a splitting in phi whose pieces are solved exactly
(`sgrhmc_simplex_splitting`); integrator = euler is Algorithm 1, the step the engine takes.

Targets are the `SimplexPotential`s of `dirichlet.py` (gamma:a, dirichlet:..., sparse-/dense-dirichlet).
The state is theta; what a run keeps is `potential.theta_view(theta)` = omega on the simplex.
Minibatches come from the oracle's batch size (`--batch n`): each chain draws its own n indices,
with replacement, every step. Without a minibatch oracle the full data are used.

Latent data (`data.latent`: the DP mixture of `targets/dpmixture.py`) are several simplices (blocks) whose counts
depend on allocations drawn given theta: `data.shape_estimate(idx, theta, rng)` gives a-hat (idx None: every
row), and SGRLD's drift is a-hat - theta - C-hat omega with C-hat the block's total count (`data.block_sum`),
which is theta (-grad U) + 1 at the expected counts (Fisher's identity; tests/test_dpmixture.py).
"""
from __future__ import annotations

import numpy as np
import sympy
from scipy import special
from sympy import Abs, Matrix, diag, eye, sqrt, zeros

from samplers.engine.info import ONE_GRADIENT
from samplers.engine.recipe import Recipe
from samplers.engine.symbols import StateSymbols
from samplers.families.common import gradient, hamiltonian_blocks, init_momentum, kick, momentum_layout, names
from samplers.gradients import Minibatch
from samplers.sampler import BHAT, EPS, INTEGRATOR, C, Param, SamplerError, SamplerSpec
from samplers.targets.simplex import SimplexPotential


def _target(s) -> SimplexPotential:
    pot = s.potential
    if not isinstance(pot, SimplexPotential):
        raise SamplerError(f"{s.name} samples Gamma and Dirichlet targets (gamma:a, dirichlet:c1,...,cd, "
                           f"sparse-dirichlet, dense-dirichlet), not '{pot.name}'")
    if getattr(s.oracle, "noisy", False) and not isinstance(s.oracle, Minibatch):
        raise SamplerError(f"{s.name} takes its noise from real minibatches of the data (--batch n), "
                           "not from simulated gradient noise")
    return pot


def _check_target(s, chains, rng):
    """init_aux hook: refuse a target the sampler cannot run on before any step is taken."""
    _target(s)
    return np.zeros((chains, 0))


def _batch_indices(s, chains, rng):
    """Each chain's minibatch (chains, n) drawn with replacement, or None for the full data."""
    if isinstance(s.oracle, Minibatch):
        return rng.integers(0, s.potential.data.n, size=(chains, s.oracle.batch))
    return None


def shape_estimate(s, chains, rng, theta=None) -> np.ndarray:
    """a-hat per chain and coordinate (chains, d): alpha + (N/n) sum_{i in S} z_i, or the exact a.

    Data with latent allocations (`data.latent`, the DP mixture) draw them given theta for the batch first."""
    pot = _target(s)
    idx = _batch_indices(s, chains, rng)
    if getattr(pot.data, "latent", False):
        return pot.data.shape_estimate(idx, theta, rng)
    if idx is None:
        return np.broadcast_to(pot.shape, (chains, pot.dim))
    return pot.data.shape_estimate(idx)


def cir_transition(theta, a, h, rng):
    """The exact CIR transition over time h (Eq. 2.2; docs/errata.md, E6): theta' = W / (2c), c = 1 / (1 - e^{-h}),
    W ~ noncentral chi-square(df = 2a, noncentrality = 2 c theta e^{-h})."""
    c = -1.0 / np.expm1(-h)                         # 1 / (1 - e^{-h}), accurate for small h
    return rng.noncentral_chisquare(2.0 * a, 2.0 * c * theta * np.exp(-h)) / (2.0 * c)


def scir_fast(s, z, rng, t):
    """One exact CIR transition over h with a-hat from a fresh minibatch (Eq. 2.3)."""
    theta = np.abs(z)   # a start drawn around the mean may be negative: the CIR is started at |theta|
    return cir_transition(theta, shape_estimate(s, z.shape[0], rng, theta), s.step_size(t), rng), ONE_GRADIENT


def sgrld_simplex_fast(s, z, rng, t):
    """Patterson & Teh (2013), expanded mean: an Euler-Maruyama step of the mirrored CIR-type diffusion."""
    pot = _target(s)
    eps = s.step_size(t)
    theta = np.abs(z)
    c = z.shape[0]
    if pot.data is None:                            # gamma:a, no data: drift a - theta
        drift = pot.shape - theta
    elif getattr(pot.data, "latent", False):        # several simplices (blocks), allocations drawn given theta
        data = pot.data
        a = shape_estimate(s, c, rng, theta)
        drift = a - theta - data.block_sum(a - data.alpha) * theta / data.block_sum(theta)
    else:
        data = pot.data
        omega = theta / theta.sum(1, keepdims=True)
        idx = _batch_indices(s, c, rng)
        counts = data.counts if idx is None else (data.n / idx.shape[1]) * data.batch_counts(idx)
        drift = data.alpha - theta + counts - data.n * omega
    noise = np.sqrt(eps * theta) * rng.standard_normal(theta.shape)
    return np.abs(theta + 0.5 * eps * drift + noise), ONE_GRADIENT


def cir_recipe(potential: SimplexPotential) -> Recipe:
    """The continuous dynamics both samplers follow, as a recipe: H = U, D = diag(|theta|), Q = 0.

    Gamma_j = d|theta_j|/d theta_j = 1, so on theta > 0 the drift is -theta (1 - (a - 1)/theta) + 1 = a - theta:
    Eq. (2.1). |theta| (the mirrored form of Patterson & Teh) keeps D positive semidefinite on the
    engine's probe points; on the target's support it is theta.
    """
    d = potential.dim
    sym = StateSymbols.make(d, [])
    return Recipe("cir", sym, 0, diag(*[Abs(t) for t in sym.theta]), diag(*([0] * d)),
                  description="z = theta, H = U, D = diag(theta), Q = 0 (CIR, SCIR paper Eq. 2.1)")


def omega(s, z) -> np.ndarray:
    """The simplex point of each chain (or theta itself on the positive line)."""
    return _target(s).theta_view(z[:, : s.dim])


SCIR = SamplerSpec(
    name="scir", title="SCIR", source="Baker, Fearnhead, Fox & Nemeth (2018) Eq. (2.2)-(2.3), Algorithm 1 (errata E6)",
    doc="Stochastic Cox-Ingersoll-Ross: each coordinate moves by the exact CIR transition over a step h, "
    "θ' = W/(2c), c = 1/(1 − e^{−h}), W ~ χ²'(2â, 2cθe^{−h}), with â = α + (N/n)Σ_{i∈S} z_i from a fresh "
    "minibatch each step (--batch n; full data without). Stationary law Gamma(a, 1) per coordinate, and "
    "ω = θ/Σθ ~ Dir(a): no discretisation error, no boundary bias. Runs keep ω on simplex targets. "
    "Targets: gamma:a, dirichlet:c1,...,cd, sparse-dirichlet, dense-dirichlet.",
    params=(Param("h", 0.1, "the time step of the exact CIR transition", lo=0, above=True, hi=100),),
    layout=lambda d, p: {}, fast=scir_fast, init_aux=_check_target, family="simplex",
    exact=True)

SGRLD_SIMPLEX = SamplerSpec(
    name="sgrld-simplex", title="SGRLD (simplex)",
    source="Patterson & Teh (2013), expanded-mean SGRLD, as compared in Baker et al. (2018) §1.3",
    doc="SGRLD on the simplex, expanded-mean parameterisation with a mirrored gamma prior: "
    "θ ← |θ + (ε/2)(α − θ + (N/n)Σ_{i∈S}(z_i − ω)) + sqrt(εθ)·ξ|, ω = θ/Σθ, ξ ~ N(0, I): an Euler-Maruyama "
    "step (of size ε/2) of the diffusion SCIR simulates exactly, reflected at 0. Its discretisation error "
    "biases small ω_j upwards (Proposition 1.1, Fig. 1). On gamma:a the drift is a − θ.",
    params=(EPS.at(1e-3),), layout=lambda d, p: {}, fast=sgrld_simplex_fast, init_aux=_check_target,
    family="simplex")


# -- the expanded-mean samplers of the recipe paper (§4.2, Supplement F.2) ---------------------------------
def _mirror_pairs(d: int, hamiltonian: bool):
    return [(k, (d + k,) if hamiltonian else ()) for k in range(d)]


def _fold(z, d):
    """`Recipe.fold` for z = theta or (theta, r): theta <- |theta|, r <- sign(theta) r (a new array)."""
    z = np.array(z, dtype=float, copy=True)
    neg = z[:, :d] < 0
    z[:, :d][neg] *= -1
    if z.shape[1] > d:
        z[:, d:][neg] *= -1
    return z


def _check_target_momentum(s, chains, rng):
    _target(s)
    return init_momentum(s, chains, rng)


def sgld_simplex_recipe(s):
    d = s.dim
    sym = StateSymbols.make(d, [])
    return Recipe(s.name, sym, 0, eye(d), zeros(d, d), mirror=_mirror_pairs(d, False),
                  description="z = theta, H = U, D = I, Q = 0, mirrored at theta = 0 (expanded mean)")


def sgld_simplex_fast(s, z, rng, t):
    """theta <- |theta - eps grad U~ + N(0, eps (2 - eps B^))|."""
    _target(s)
    eps = s.step_size(t)
    theta = _fold(z, s.dim)
    _, g, b = gradient(s, theta, rng)
    return np.abs(theta - eps * g + kick(eps * (2.0 - eps * b), theta.shape, rng)), ONE_GRADIENT


def sghmc_simplex_recipe(s):
    d = s.dim
    sym = StateSymbols.make(d, names("r", d))
    r = Matrix(sym.aux)
    D = sympy.diag(zeros(d, d), s["C"] * eye(d))
    Q = Matrix(sympy.BlockMatrix([[zeros(d, d), -eye(d)], [eye(d), zeros(d, d)]]))
    return Recipe(s.name, sym, (r.T * r)[0] / 2, D, Q, blocks=hamiltonian_blocks(d, 2 * d),
                  mirror=_mirror_pairs(d, True),
                  description="z = (theta, r), H = U + r.r/2, D = diag(0, C), Q = [[0, -I], [I, 0]], mirrored at 0")


def sghmc_simplex_fast(s, z, rng, t):
    """r <- r - eps grad U~ - eps C r + N(0, eps (2C - eps B^)); theta <- theta + eps r; then the fold."""
    _target(s)
    d, eps, C = s.dim, s.step_size(t), s["C"]
    z = _fold(z, d)
    theta, r = z[:, :d], z[:, d:]
    _, g, b = gradient(s, theta, rng)
    r_new = r + eps * (-g - C * r) + kick(eps * (2 * C - eps * b), r.shape, rng)
    return _fold(np.concatenate([theta + eps * r_new, r_new], axis=1), d), ONE_GRADIENT


def sgrhmc_simplex_recipe(s):
    """gSGRHMC with G(theta) = diag(theta)^-1 (the Fisher metric of the recipe paper's §4.2)."""
    d = s.dim
    sym = StateSymbols.make(d, names("r", d))
    r = Matrix(sym.aux)
    half = [sqrt(Abs(t)) for t in sym.theta]              # G^{-1/2}
    D = sympy.diag(zeros(d, d), diag(*[Abs(t) for t in sym.theta]))
    Q = Matrix(sympy.BlockMatrix([[zeros(d, d), -diag(*half)], [diag(*half), zeros(d, d)]]))
    return Recipe(s.name, sym, (r.T * r)[0] / 2, D, Q, blocks=hamiltonian_blocks(d, 2 * d),
                  drop={"gamma"} if s.spec.naive else (), mirror=_mirror_pairs(d, True),
                  description="z = (theta, r), H = U + r.r/2, D = diag(0, diag(theta)), "
                  "Q = [[0, -diag(theta)^1/2], [diag(theta)^1/2, 0]], mirrored at 0")


def sgrhmc_simplex_fast(s, z, rng, t):
    """r <- r - eps sqrt(theta) grad U~ [+ eps / (2 sqrt theta)] - eps theta r + N(0, eps theta (2 - eps B^));
    theta <- theta + eps sqrt(theta) r; then the fold."""
    if s["integrator"] == "splitting":
        return sgrhmc_simplex_splitting(s, z, rng, t)
    _target(s)
    d, eps = s.dim, s.step_size(t)
    z = _fold(z, d)
    theta, r = z[:, :d], z[:, d:]
    _, g, b = gradient(s, theta, rng)
    half = np.sqrt(theta)
    drift = -half * g - theta * r
    if not s.spec.naive:
        drift += 0.5 / half                                # Gamma_r = d sqrt(theta) / d theta
    r_new = r + eps * drift + kick(eps * (2 - eps * b) * theta, r.shape, rng)
    return _fold(np.concatenate([theta + eps * half * r_new, r_new], axis=1), d), ONE_GRADIENT


# -- gSGRHMC's splitting integrator: in phi = 2 sqrt(theta) each piece is solved exactly ----------------------
# Per component, given the step's a-hat, the recipe's SDE in phi = 2 sqrt(theta) (no Ito term: theta has no noise) is
#     dphi = r dt,   dr = -phi/2 dt - c/phi dt - (phi^2/4) r dt + sqrt(2 phi^2/4) dW,   c = 1 - 2 a-hat,
# Langevin dynamics on V(phi) = phi^2/4 + c log phi with friction theta; Gamma_r = 1/(2 sqrt theta) is 1/phi of the
# force (naive: c = 2 - 2 a-hat). The step is the symmetric splitting O(h/2) B(h/2) A(h) B(h/2) O(h/2) of that drift:
# O the friction and noise at fixed theta (an exact OU step, stable at any eps theta), B the kick -phi/2, and A the
# Hamiltonian flow of r^2/2 + c log phi, solved in closed form (`_log_flow`): the singular force c/phi that makes
# the Euler step diverge for a-hat < 1/2 never appears as a kick.
SQRT_PI = np.sqrt(np.pi)
TINY_THETA = np.finfo(float).tiny   # phi^2/4 may underflow where the naive form collapses: theta stays > 0


def _inverse_log_erfc(ell):
    """v >= 0 with log erfc(v) = ell <= 0 (Newton on the asymptotic side, where exp(ell) underflows)."""
    ell = np.minimum(ell, 0.0)
    with np.errstate(under="ignore"):
        v = special.erfcinv(np.exp(ell))
    far = ell < -600
    if far.any():
        w, target = np.sqrt(-ell[far]), ell[far]
        for _ in range(6):
            ex = special.erfcx(w)
            w = w + (np.log(ex) - w * w - target) * 0.5 * SQRT_PI * ex
        v[far] = w
    return v


def _inverse_log_dawson_integral(L):
    """v >= 0 with log G(v) = L, G(v) = int_0^v e^{s^2} ds = e^{v^2} D(v) (D: Dawson's function).

    Newton on h(v) = v^2 + log D(v), h' = 1/D; started on the right of the root from the asymptotics G ~ v near 0
    and G ~ e^{v^2}/(2v) far out; the half-step floor keeps iterates positive."""
    L = np.maximum(L, -700.0)
    big = np.maximum(L, 0.0)
    v = np.where(L < 0, np.exp(L) * 1.5, np.sqrt(big + 0.5 * np.log(big + 1.0) + np.log(2.0)) + 0.5)
    for _ in range(60):
        D = special.dawsn(v)
        new = np.maximum(v - (v * v + np.log(D) - L) * D, 0.5 * v)
        if np.all(np.abs(new - v) <= 1e-12 * v):   # quadratic convergence: the last step is at rounding
            return new
        v = new
    return v


def _log_flow(phi, r, c, h):
    """The exact flow over time h of dphi = r, dr = -c/phi (Hamiltonian r^2/2 + c log phi), folded at phi = 0.

    c > 0 attracts to 0: with u = r/sqrt(2c), energy gives phi = P e^{-u^2} (P constant on the orbit) and
    d/dt [phi erfcx(u)] = sqrt(2c/pi), so erfc(u) grows at the constant rate sqrt(2c/pi)/P; at erfc(u) = 2 the
    chain reaches 0 with r = -inf and the fold sends it back out with r = +inf (erfc(u) = 0): the phase wraps.
    c < 0 repels: with u = r/sqrt(-2c), phi = P e^{u^2} and d/dt [phi D(u)] = sqrt(-c/2). c = 0: free flight."""
    phi1, r1 = phi + h * r, r.copy()
    att, rep = c > 0, c < 0
    if att.any():
        phi1[att], r1[att] = _attracted(phi[att], r[att], c[att], _at(h, att))
    if rep.any():
        phi1[rep], r1[rep] = _repelled(phi[rep], r[rep], -c[rep], _at(h, rep))
    free = ~(att | rep) & (phi1 < 0)
    phi1[free], r1[free] = -phi1[free], -r1[free]
    return phi1, r1


def _at(h, mask):
    return h[mask] if np.ndim(h) else h


def _attracted(phi, r, k, h):
    """`_log_flow` for c = k > 0. The phase is kept as P times erfc(|u|) measured from the nearer end (the
    collision), so that chains close to 0, where erfc(u) is within rounding of 2, keep their digits."""
    sk = np.sqrt(2 * k)
    u0 = r / sk
    log_p = np.log(phi) + u0 * u0
    with np.errstate(over="ignore"):
        two_p = 2 * np.exp(log_p)
    w = h * np.sqrt(2 * k / np.pi)                     # the phase P erfc(u) travelled in time h
    edge = phi * special.erfcx(np.abs(u0))            # P erfc(|u0|)
    # S: phase since the last collision; negative while an incoming chain has not yet reached 0
    S = np.where(u0 >= 0, edge + w, w - edge)
    wraps = (S >= two_p) & np.isfinite(two_p)
    S[wraps] = np.mod(S[wraps], two_p[wraps])
    outgoing = (S >= 0) & (S <= 0.5 * two_p)
    pe = np.where(S < 0, -S, np.where(outgoing, S, two_p - S))
    v = _inverse_log_erfc(np.log(pe) - log_p)
    return pe / special.erfcx(v), np.where(outgoing, v, -v) * sk


def _repelled(phi, r, k, h):
    """`_log_flow` for c = -k < 0: phi D(u) = phi0 D(u0) + h sqrt(k/2), r increasing; no collision."""
    sk = np.sqrt(2 * k)
    u0 = r / sk
    b = special.dawsn(u0) + h * np.sqrt(k / 2) / phi     # G(u) e^{-u0^2}, G(u) = e^{u^2} D(u)
    with np.errstate(divide="ignore"):
        v = _inverse_log_dawson_integral(u0 * u0 + np.log(np.abs(b)))
    u = np.sign(b) * v
    return phi * np.exp((u - u0) * (u + u0)), u * sk


def sgrhmc_simplex_splitting(s, z, rng, t):
    """O(h/2) B(h/2) A(h) B(h/2) O(h/2) in phi = 2 sqrt(theta) (above), one minibatch a-hat per step."""
    _target(s)
    d, h = s.dim, s.step_size(t)
    z = _fold(z, d)
    theta, r = z[:, :d], z[:, d:]
    a_hat = shape_estimate(s, z.shape[0], rng, theta)
    c = (2.0 if s.spec.naive else 1.0) - 2.0 * a_hat
    # a likelihood of pi (LDA's Eq. S.29 form) adds n_k. / theta_k. to dU/dtheta: the kick -sqrt(theta) dU/dtheta's
    # smooth part, -phi/2, grows by that factor, frozen over the step with a-hat (it is a minibatch estimate too)
    row = getattr(_target(s).data, "row_force", None)
    k = 1.0 + (row(a_hat, theta) if row is not None else 0.0)
    r = _ou(r, theta, h / 2, rng)
    phi = 2.0 * np.sqrt(theta)
    r = r - 0.25 * h * k * phi
    phi, r = _log_flow(phi, r, np.array(c, dtype=float), h)
    r = r - 0.25 * h * k * phi
    theta = np.maximum(0.25 * phi * phi, TINY_THETA)
    r = _ou(r, theta, h / 2, rng)
    return np.concatenate([theta, r], axis=1), ONE_GRADIENT


def _sgrhmc_simplex_layout(d, params):
    if params["integrator"] == "splitting" and params["Bhat"] != 0:
        raise SamplerError("integrator = splitting takes Bhat = 0: its O step draws the noise of the continuous "
                           "dynamics exactly and has no eps B^ term to subtract")
    return momentum_layout(d, params)


def _ou(r, theta, h, rng):
    """dr = -theta r dt + sqrt(2 theta) dW over time h at fixed theta, exactly."""
    return np.exp(-theta * h) * r + np.sqrt(-np.expm1(-2 * theta * h)) * rng.standard_normal(r.shape)


_TARGETS = "Targets: gamma:a, dirichlet:c1,...,cd, sparse-dirichlet, dense-dirichlet; minibatches with --batch n."
_EXPANDED = ("Expanded mean (recipe paper §4.2): θ_k > 0 with θ_k ~ Gamma(α_k + n_k, 1), runs keep "
             "π = θ/Σθ ~ Dir(α + n); mirrored at 0 (θ ← |θ|, and r ← −r where θ crossed 0). ")

SGLD_SIMPLEX = SamplerSpec(
    name="sgld-simplex", title="SGLD (simplex)", source="recipe paper §4.2, Supplement F.2 (expanded-mean SGLD)",
    doc=_EXPANDED + "SGLD: D = I, Q = 0; θ ← |θ − ε∇Ũ + N(0, ε(2 − εB̂))|. Without a metric its steps are as "
    "large for θ_k = 10⁻⁶ as for θ_k = 800, and the kick ε(a − 1)/θ near 0 throws a sparse component far out: "
    "on sparse-dirichlet it fails at every ε tried (10⁻³ to 0.02: the largest KS of an ω marginal 0.997 to 1.0, "
    "SCIR's 0.22 the same way; docs/notes/simplex-samplers.md); on dense-dirichlet it is near SCIR (0.10 to 0.18). "
    "Not a working sampler for sparse simplex targets. " + _TARGETS,
    params=(EPS.at(0.01), BHAT), layout=lambda d, p: {}, recipe=sgld_simplex_recipe, fast=sgld_simplex_fast,
    init_aux=_check_target, family="simplex")

SGHMC_SIMPLEX = SamplerSpec(
    name="sghmc-simplex", title="SGHMC (simplex)", source="recipe paper §4.2, Supplement F.2 (expanded-mean SGHMC)",
    doc=_EXPANDED + "SGHMC: z = (θ, r), H = U + rᵀr/2, D = diag(0, C·I), Q = [[0, −I], [I, 0]]; "
    "r ← r − ε∇Ũ − εCr + N(0, ε(2C − εB̂)), θ ← θ + εr. As SGLD here, it fails on sparse-dirichlet at every ε "
    "tried (10⁻³ to 0.02: the largest KS of an ω marginal 0.996 to 1.0) and is near SCIR on dense-dirichlet "
    "(0.08 to 0.21; docs/notes/simplex-samplers.md): not a working sampler for sparse simplex targets. " + _TARGETS,
    params=(EPS.at(0.02), C, BHAT), layout=momentum_layout, recipe=sghmc_simplex_recipe,
    fast=sghmc_simplex_fast, init_aux=_check_target_momentum, family="simplex")

SGRHMC_SIMPLEX_DOC = (
    "gSGRHMC with the Fisher metric G(θ) = diag(θ)⁻¹: z = (θ, r), H = U + rᵀr/2, D = diag(0, diag(θ)), "
    "Q = [[0, −diag(θ)^½], [diag(θ)^½, 0]], Γ_r = 1/(2√θ); r ← r − ε√θ∇Ũ + ε/(2√θ) − εθr + N(0, εθ(2 − εB̂)), "
    "θ ← θ + ε√θ r (Algorithm 1's signs, errata E1). The friction εθ_k must stay below 2 (ε < 0.0025 for a "
    "component near 800), and the Euler step diverges on components with a < ½, where the force (a − ½)/√θ "
    "pulls to 0 without bound (the sparse Dirichlet's α = 0.1). " + "integrator: splitting (the default): in "
    "φ = 2√θ, an exact OU step for the friction θ, the kick −φ/2, and the exact flow of r²/2 + (1 − 2â) log φ "
    "(folded at 0), as O(ε/2) B(ε/2) A(ε) B(ε/2) O(ε/2); stable at any a and ε θ (Bhat = 0). euler: Algorithm 1, "
    "the engine's step (needs ε θ < 2 and a ≥ ½). ")
SGRHMC_SIMPLEX = SamplerSpec(
    name="sgrhmc-simplex", title="gSGRHMC (simplex)",
    source="recipe paper §4.2, Supplement F.2, Algorithm 1 with G(θ) = diag(θ)⁻¹ (errata E1)",
    doc=_EXPANDED + SGRHMC_SIMPLEX_DOC + _TARGETS,
    params=(EPS.at(0.1), BHAT, INTEGRATOR.at("splitting")), layout=_sgrhmc_simplex_layout,
    recipe=sgrhmc_simplex_recipe, fast=sgrhmc_simplex_fast, fast_only=dict(integrator="splitting"),
    init_aux=_check_target_momentum, family="simplex")

SGRHMC_SIMPLEX_NAIVE = SamplerSpec(
    name="sgrhmc-simplex-naive", title="naive SGRHMC (simplex)",
    source="recipe paper Eq. (16) with G(θ) = diag(θ)⁻¹",
    doc=_EXPANDED + "gSGRHMC without Γ_r = 1/(2√θ): the θ-law becomes Gamma(a − ½) where that exists; for "
    "a ≤ ½ (sparse components) there is none and the chains collapse towards 0. integrator: splitting "
    "(gSGRHMC's, with the same term dropped: c = 2 − 2â in the flow of r²/2 + c log φ) or euler. " + _TARGETS,
    params=(EPS.at(0.1), BHAT, INTEGRATOR.at("splitting")), layout=_sgrhmc_simplex_layout,
    recipe=sgrhmc_simplex_recipe, fast=sgrhmc_simplex_fast, fast_only=dict(integrator="splitting"),
    init_aux=_check_target_momentum, corrected="sgrhmc-simplex", family="simplex")
