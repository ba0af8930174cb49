"""A truncated Dirichlet-process mixture of multinomial observations (SCIR paper §4.2, Fig. 3b), in the gamma form.

Model (Dunson & Xing 2009, truncated at K components): observation i is a count vector x_i over d categories,
x_i | z_i = k ~ Multinomial(n_i, phi_k), phi_k ~ Dir(a 1_d), and the weights follow the truncated stick-breaking
of a DP(alpha): pi_k = v_k prod_{j<k} (1 - v_j), v_k ~ Beta(1, alpha) for k < K, v_K = 1.

Every simplex in it is written with independent gamma variables (the expanded mean of the SCIR paper §2):
phi_k = theta_k / sum(theta_k) with theta_kj ~ Gamma(a, 1), and stick k as a point (g_k1, g_k2) of the 2-simplex,
v_k = g_k1 / (g_k1 + g_k2), g_k1 ~ Gamma(1, 1), g_k2 ~ Gamma(alpha, 1). The state theta (chains, K d + 2 (K - 1))
holds the K component blocks of d, then the K - 1 stick blocks of 2. Given the allocations z every block's
likelihood is a multinomial in its normalised block, so its conditional posterior is Gamma(prior + counts):
a component's counts are the category counts of the observations allocated to it, stick k's are
(m_k, m_{>k}), the numbers allocated to k and beyond k. That makes the model a data object the simplex samplers
run unchanged (`latent = True`, read by `samplers/families/simplex.py`):

* `shape_estimate(idx, theta, rng)`: SCIR's a-hat = prior + (N/n) counts of a minibatch whose allocations are
  drawn from p(z_i | x_i, theta) (the paper's minibatched Gibbs step); `block_sum` gives each coordinate its
  block's total, which expanded-mean SGRLD subtracts (drift a-hat - theta - C-hat_block omega).
* `example_losses` / `batch_grad` / `prior_U` / `prior_grad` for `gradients.Minibatch`: the marginal
  -log p(x_i | theta) (z summed out) and its gradient by Fisher's identity (the expected counts under the
  responsibilities), so the gradient samplers (sgld-simplex, sgrhmc-simplex, ...) run on it too.

Scores: the held-out log predictive (nats per test observation, multinomial coefficient included; higher is
better) and the recovered-component error: the mean total-variation distance between each true component and
the sampled component matched to it by an optimal assignment (scipy's linear_sum_assignment; lower is better).
The synthetic data are drawn from a known finite mixture (`synthetic_mixture`), so both can be computed.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import special
from scipy.optimize import linear_sum_assignment

from samplers.targets.simplex import SimplexPotential

TINY = np.finfo(float).tiny   # an exactly-zero gamma variable (SCIR's chi-square may underflow) keeps log finite

# sizes: (training observations, test observations, categories, true components, truncation K, mean tokens)
SIZES = {
    "small": dict(n_train=2000, n_test=500, d=40, k_true=5, k=12, tokens=5.0),
    "default": dict(n_train=10_000, n_test=1000, d=100, k_true=10, k=20, tokens=5.0),
    "full": dict(n_train=30_000, n_test=3000, d=294, k_true=20, k=40, tokens=4.0),
}
BASE_SHAPE = 0.1        # a: the base Dir(a 1_d), sparse as the paper's categories are
DP_ALPHA = 1.0          # the DP's concentration (fixed here; the paper puts a gamma prior on it)
TRUE_SPARSITY = 0.1     # the true components are Dir(0.1) draws: a few categories each
TRUE_WEIGHTS = 5.0      # the true weights are a Dir(5) draw: no component is negligible


@dataclass
class DPMixtureData:
    x: np.ndarray                  # (N, d) training counts
    x_test: np.ndarray             # (T, d) held-out counts
    k: int                         # truncation level K
    base: float = BASE_SHAPE
    dp_alpha: float = DP_ALPHA
    true_phi: np.ndarray | None = None       # (K*, d) the generating components, where known
    true_weights: np.ndarray | None = None   # (K*,)

    latent = True                  # shape estimates depend on theta through the allocations

    @property
    def n(self) -> int:
        return len(self.x)

    @property
    def d(self) -> int:
        return self.x.shape[1]

    @property
    def dim(self) -> int:
        return self.k * self.d + 2 * (self.k - 1)

    @cached_property
    def alpha(self) -> np.ndarray:
        """The gamma prior shape of every coordinate: a for the components, (1, alpha) for each stick."""
        sticks = np.tile([1.0, self.dp_alpha], self.k - 1)
        return np.concatenate([np.full(self.k * self.d, self.base), sticks])

    @cached_property
    def _xf(self) -> np.ndarray:
        return self.x.astype(float)

    @cached_property
    def _xf_test(self) -> np.ndarray:
        return self.x_test.astype(float)

    @staticmethod
    def _log_coef(x) -> np.ndarray:
        """log of the multinomial coefficient n_i! / prod_j x_ij!."""
        return special.gammaln(x.sum(1) + 1.0) - special.gammaln(x + 1.0).sum(1)

    @cached_property
    def _coef(self) -> np.ndarray:
        return self._log_coef(self._xf)

    @cached_property
    def _coef_test(self) -> np.ndarray:
        return self._log_coef(self._xf_test)

    # -- the state's blocks ---------------------------------------------------------------------------------
    def split(self, theta):
        """Component block (chains, K, d) and stick block (chains, K - 1, 2), views of |theta|."""
        t = np.abs(theta)
        kd = self.k * self.d
        return t[:, :kd].reshape(-1, self.k, self.d), t[:, kd:].reshape(-1, self.k - 1, 2)

    def block_sum(self, x) -> np.ndarray:
        """Each coordinate replaced by the total of its block (chains, dim)."""
        comp, sticks = self.split(x)
        return np.concatenate([np.repeat(comp.sum(2), self.d, axis=1), np.repeat(sticks.sum(2), 2, axis=1)], axis=1)

    def view(self, theta) -> np.ndarray:
        """theta with every block normalised: phi_k and (v_k, 1 - v_k) (chains, dim)."""
        return np.abs(theta) / self.block_sum(theta)

    def log_params(self, theta):
        """log phi (chains, K, d) and log pi (chains, K) of each chain's state."""
        comp, sticks = self.split(theta)
        log_phi = np.log(np.maximum(comp, TINY)) - np.log(comp.sum(2, keepdims=True))
        logs = np.log(np.maximum(sticks, TINY)) - np.log(sticks.sum(2, keepdims=True))   # log v, log(1 - v)
        c = logs.shape[0]
        log_v = np.concatenate([logs[:, :, 0], np.zeros((c, 1))], axis=1)
        before = np.concatenate([np.zeros((c, 1)), np.cumsum(logs[:, :, 1], axis=1)], axis=1)
        return log_phi, log_v + before

    # -- the likelihood -------------------------------------------------------------------------------------
    def _batch(self, idx, test=False):
        """The counts and log coefficients of the rows idx: (chains, b, d), (chains, b); idx None: every row."""
        xf, coef = (self._xf_test, self._coef_test) if test else (self._xf, self._coef)
        if idx is None:
            return xf[None], coef[None]
        return xf[idx], coef[idx]

    def joint(self, theta, xb) -> np.ndarray:
        """log pi_k + sum_j x_ij log phi_kj for each chain, row and component: (chains, b, K)."""
        log_phi, log_pi = self.log_params(theta)
        return np.matmul(xb, log_phi.transpose(0, 2, 1)) + log_pi[:, None, :]

    def counts(self, weights, xb) -> np.ndarray:
        """The sufficient counts (chains, dim) of allocation weights (chains, b, K) (one-hot or responsibilities)."""
        comp = np.matmul(weights.transpose(0, 2, 1), xb)                  # (chains, K, d)
        m = weights.sum(1)                                                # (chains, K)
        beyond = np.cumsum(m[:, ::-1], axis=1)[:, ::-1] - m               # m_{>k}
        sticks = np.stack([m[:, :-1], beyond[:, :-1]], axis=2)
        return np.concatenate([comp.reshape(len(m), -1), sticks.reshape(len(m), -1)], axis=1)

    def responsibilities(self, theta, idx):
        xb, _ = self._batch(idx)
        j = self.joint(theta, xb)
        return np.exp(j - special.logsumexp(j, axis=2, keepdims=True)), xb

    def sample_allocations(self, theta, idx, rng):
        """z_i ~ p(z_i | x_i, theta) for each chain's rows (chains, b), by inverting the conditional CDF."""
        r, xb = self.responsibilities(theta, idx)
        u = rng.random(r.shape[:2] + (1,))
        z = (np.cumsum(r, axis=2) < u).sum(2)
        return np.minimum(z, self.k - 1), xb

    def shape_estimate(self, idx, theta, rng) -> np.ndarray:
        """a-hat = prior + (N/n) counts of the minibatch idx (chains, n) (None: all rows) at sampled allocations."""
        z, xb = self.sample_allocations(theta, idx, rng)
        onehot = (z[..., None] == np.arange(self.k)).astype(float)
        counts = self.counts(onehot, np.broadcast_to(xb, z.shape + (self.d,)))
        return self.alpha + (self.n / z.shape[1]) * counts

    def example_losses(self, theta, idx) -> np.ndarray:
        """-log p(x_i | theta), z summed out (chains, b)."""
        xb, coef = self._batch(idx)
        return -(special.logsumexp(self.joint(theta, xb), axis=2) + coef)

    def batch_grad(self, theta, idx, rng=None) -> np.ndarray:
        """sum_{i in idx} grad -log p(x_i | theta) (chains, dim), by Fisher's identity: E-counts / theta terms.
        Exact in the allocations (their expectation), so it draws nothing from rng (which latent data get)."""
        r, xb = self.responsibilities(theta, idx)
        e = self.counts(r, np.broadcast_to(xb, r.shape[:2] + (self.d,)))
        t = np.abs(theta)
        return -(e / np.maximum(t, TINY) - self.block_sum(e) / self.block_sum(t))

    def prior_U(self, theta):
        with np.errstate(divide="ignore"):
            return (theta - (self.alpha - 1) * np.log(theta)).sum(-1)

    def prior_grad(self, theta):
        return 1.0 - (self.alpha - 1) / theta

    def U(self, theta):
        ok = (theta > 0).all(-1)
        with np.errstate(all="ignore"):
            out = self.example_losses(theta, None).sum(1) + self.prior_U(theta)
        return np.where(ok, out, np.inf)

    def grad(self, theta):
        return self.batch_grad(theta, None) + self.prior_grad(theta)

    # -- scores ---------------------------------------------------------------------------------------------
    def log_predictive_chains(self, theta) -> np.ndarray:
        """Each chain's held-out log predictive, mean over the test rows of log p(x_t | theta_c): (chains,)."""
        xb, coef = self._batch(None, test=True)
        return (special.logsumexp(self.joint(theta, xb), axis=2) + coef).mean(1)

    def log_predictive(self, theta) -> float:
        """Held-out log predictive of the chains' averaged predictive, mean log (1/C) sum_c p(x_t | theta_c)."""
        xb, coef = self._batch(None, test=True)
        per = special.logsumexp(self.joint(theta, xb), axis=2)            # (chains, T)
        return float((special.logsumexp(per, axis=0) - np.log(len(per)) + coef).mean())

    def matched(self, theta):
        """Each true component's sampled partner under the optimal assignment by total-variation distance:
        the partners' phi (chains, K*, d) and their distances (chains, K*)."""
        comp, _ = self.split(theta)
        phi = comp / comp.sum(2, keepdims=True)
        cost = 0.5 * np.abs(self.true_phi[None, :, None, :] - phi[:, None, :, :]).sum(3)   # (chains, K*, K)
        cols = np.array([linear_sum_assignment(c)[1] for c in cost])                    # rows come out in order
        rows = np.arange(len(cost))[:, None]
        return phi[rows, cols], np.take_along_axis(cost, cols[:, :, None], axis=2)[..., 0]

    def component_error(self, theta) -> np.ndarray:
        """Per chain: the mean TV distance between each true component and its optimally matched sampled one."""
        return self.matched(theta)[1].mean(1)

    def absent_mass(self, theta, level: float = 1e-3) -> np.ndarray:
        """Per chain: the mean mass the matched components put on the categories their true partner gives less
        than `level` (the sparse coordinates whose upward bias is SGRLD's, Proposition 1.1)."""
        phi, _ = self.matched(theta)
        return (phi * (self.true_phi < level)).sum(2).mean(1)

    def occupied(self, theta, threshold: float = 0.01) -> np.ndarray:
        """Per chain: how many components carry more than `threshold` of the weight."""
        return (np.exp(self.log_params(theta)[1]) > threshold).sum(1)

    def truth_log_predictive(self) -> float:
        """The generating mixture's own held-out log predictive (the best a sampler can hope for, on average)."""
        log_phi = np.log(np.maximum(self.true_phi, TINY))
        j = self._xf_test @ log_phi.T + np.log(self.true_weights)
        return float((special.logsumexp(j, axis=1) + self._coef_test).mean())

    def init(self, chains: int, rng) -> np.ndarray:
        """Starting states: every block a draw from Gamma(1, 1)s, i.e. random components and sticks, a Dir(1) apiece."""
        return rng.gamma(1.0, 1.0, size=(chains, self.dim))


def synthetic_mixture(seed: int = 0, n_train: int = 10_000, n_test: int = 1000, d: int = 100, k_true: int = 10,
                      k: int = 20, tokens: float = 5.0, base: float = BASE_SHAPE,
                      dp_alpha: float = DP_ALPHA) -> DPMixtureData:
    """Data from a known mixture: k_true components phi* ~ Dir(0.1 1_d), weights ~ Dir(5 1), each row n_i = 1 +
    Poisson(tokens - 1) draws from its component; fitted with truncation k."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(d, TRUE_SPARSITY), size=k_true)
    weights = rng.dirichlet(np.full(k_true, TRUE_WEIGHTS))
    total = n_train + n_test
    z = rng.choice(k_true, size=total, p=weights)
    n = 1 + rng.poisson(tokens - 1.0, size=total)
    x = rng.multinomial(n, phi[z]).astype(np.int32)
    return DPMixtureData(x[:n_train], x[n_train:], k, base, dp_alpha, phi, weights)


class MixturePotential(SimplexPotential):
    """The DP mixture's posterior on theta; runs keep every block normalised (`DPMixtureData.view`)."""

    def theta_view(self, theta):
        return self.data.view(theta)


def dp_mixture_potential(data: DPMixtureData, name: str = "dp-mixture") -> MixturePotential:
    return MixturePotential(
        name, data.dim, data.U, data.grad, ((0.0, 1.0), (0.0, 1.0)),
        description=f"truncated DP mixture (K = {data.k}) of multinomial rows over d = {data.d} categories, "
                    f"{data.n} training and {len(data.x_test)} test rows, base Dir({data.base:g}), DP alpha = "
                    f"{data.dp_alpha:g} (SCIR paper §4.2); gamma form, runs keep every block normalised",
        formula=r"x_i \mid z_i = k \sim \mathrm{Mult}(n_i, \phi_k),\ \phi_k = \theta_k / \textstyle\sum_j \theta_{kj}",
        data=data, start=np.ones(data.dim), shape=data.alpha, simplex=True)


def dp_mixture(seed: int = 0, size: str = "default") -> MixturePotential:
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    return dp_mixture_potential(synthetic_mixture(seed, **SIZES[size]))


# the Models page's entry: SGRLD against SCIR, step sizes from the reproduction's tuning (scir-dpmixture)
LIVE_PARAMS = {"sgrld-simplex": {"eps": 0.03}, "scir": {"h": 0.3}}
LIVE_BATCH, LIVE_CHAINS = 1000, 4


def live_fields(seed: int = 0, size: str = "default") -> dict:
    """The fields of the page's `LiveModel` for the DP mixture (`targets/live.py` builds it: live imports this
    module, so this one cannot import live back). The score is the held-out log predictive of the chains'
    averaged predictive, higher is better; it reads the state or its normalised view alike."""
    pot = dp_mixture(seed, size)
    data = pot.data
    return dict(
        key="dp-mixture", title="DP mixture of categorical data (SCIR paper §4.2)", potential=pot,
        metric=data.log_predictive, metric_name="held-out log predictive (nats per row)", lower_is_better=False,
        pair=("sgrld-simplex", "scir"), params=LIVE_PARAMS, batch=min(LIVE_BATCH, data.n), chains=LIVE_CHAINS,
        init=data.init,
        description=f"{pot.description}; the generating mixture's own score is {data.truth_log_predictive():.3f}")
