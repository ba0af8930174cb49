"""One live run: an ensemble of chains plus the running aggregates the views draw each frame.

Only aggregates leave this module (histogram counts, a few highlighted paths, a capped
subsample of the ensemble, scalar metrics), never all samples: that is what keeps a frame
cheap on the server and small on the websocket.

The histogram accumulates every `thin`-th state of every live chain after `burn` steps; until
then it shows the ensemble as it is now. KL and TV are computed from those counts against the
exact bin masses (joint for 1-D and 2-D targets, the θ₁ marginal beyond), with the mass
outside the plotting box as one more bin, as samplers.diagnostics does. The exact law is the sampler's
`target`: exp(-beta U) at that side's inverse temperature, so two sides at different beta each have theirs.
"""
from __future__ import annotations

import numpy as np

from samplers import diagnostics as dg
from samplers.accuracy import edges_for, escaped_chains, exact_masses, floor_from_counts
from samplers.cache import BoundedCache
from samplers.errors import InputError
from samplers.run import Ensemble
from samplers.sampler import Sampler

_MASS_CACHE = BoundedCache(256)
# the noise floor's groups of chains (see LiveRun.noise_floor): 16 give each bin's variance to ±35 %, and the
# floor, a sum over the bins, closer; below 8 groups (16 chains) or 50 samples a group it is not decidable
FLOOR_GROUPS, MIN_GROUPS, MIN_GROUP_SAMPLES = 16, 8, 50
GROUP_FOLD = 1 << 16   # samples whose groups wait to be counted at most (512 kB of indices: counted in cache)


def bin_masses(pot, edges) -> np.ndarray:
    """Exact bin masses of the scored histogram, cached per potential (they cost ~10-50 ms)."""
    key = (pot.name, pot.dim, tuple(map(tuple, pot.box)), tuple(len(e) for e in edges))
    def masses():
        if pot.dim <= 2:
            return np.asarray(exact_masses(pot, edges[0] if pot.dim == 1 else tuple(edges)), float)
        return np.asarray(dg.bin_masses_1d(pot.marginals[0], edges[0]), float)
    return _MASS_CACHE.get_or_make(key, masses)


def _sd(w: np.ndarray, mid: np.ndarray) -> float:
    """The standard deviation of a histogram of weights w at the bins' midpoints."""
    w = w / w.sum()
    m = (w * mid).sum()
    return float(np.sqrt((w * (mid - m) ** 2).sum()))


class KeptSamples:
    """Every chain's state at evenly spaced steps since burn-in, at most `max_rows` rows (chain x step):
    when full, every other snapshot goes and the spacing doubles, so what is kept always spans the run."""

    def __init__(self, chains: int, max_rows: int = 200_000):
        self.max_snapshots = max(1, max_rows // max(chains, 1))
        self.every, self.first = 1, None
        self.steps: list[int] = []
        self.states: list[np.ndarray] = []
        self.alive: list[np.ndarray] = []

    def offer(self, t: int, z: np.ndarray, alive: np.ndarray) -> None:
        if self.first is None:
            self.first = t
        if (t - self.first) % self.every:
            return
        self.steps.append(t)
        self.states.append(z.copy())
        self.alive.append(alive.copy())
        if len(self.steps) > self.max_snapshots:
            self.steps, self.states, self.alive = self.steps[::2], self.states[::2], self.alive[::2]
            self.every *= 2


class _Frame:
    """Called with the state after each step of a frame (`Ensemble.advance`'s `each`): copies it into zs (or, with
    zs None, keeps a copy in z's own layout, which a target's view may see: `theta_of`), and the live chains of
    each step after a chain was frozen (a step without an entry had every chain alive). The states are copies: a
    later step may reuse its input."""
    __slots__ = ("zs", "states", "alive", "guard", "n")

    def __init__(self, zs: np.ndarray | None, guard):
        self.zs, self.states, self.alive, self.guard, self.n = zs, [], {}, guard, 0

    def __call__(self, z: np.ndarray) -> None:
        if self.zs is None:
            self.states.append(z.copy(order="K"))
        else:
            self.zs[self.n] = z
        if not self.guard._none_frozen:
            self.alive[self.n] = self.guard.alive.copy()
        self.n += 1


class LiveRun:
    """An Ensemble advanced step by step, with histograms, paths, an ESS trace and metrics."""

    def __init__(self, sampler: Sampler, chains: int, seed: int, burn: int = 100, thin: int = 1,
                 n_paths: int = 3, max_points: int = 2000, ess_chains: int = 128, ess_len: int = 256,
                 label: str = "A", start: str = "near", dtype: str = "float64"):
        self.sampler, self.label = sampler, label
        self.pot = pot = sampler.target   # exp(-beta U) at this side's inverse temperature
        self.dim = pot.dim
        self.plot_dims = min(self.dim, 2)
        self.burn, self.thin = int(burn), max(1, int(thin))
        self.ens = Ensemble(sampler, chains, seed, dtype=dtype)
        if start == "exact":
            # a stream of its own: the same seed gives the same steps whichever start is chosen
            draws = pot.exact_states(self.ens.z.shape[0], np.random.default_rng([int(seed), 1]))
            if draws is None:
                raise InputError(f"Start: {pot.name} has no exact sampler to start the chains from; "
                                 "start them near its start point instead")
            self.ens.z[:, :pot.dim] = draws
        self.chains = self.ens.z.shape[0]
        self.max_points = int(max_points)
        columns = list(range(self.ens.z.shape[1]))
        layout = sampler.layout
        self.r_cols = columns[layout.columns("momentum")] if layout.has("momentum") else []
        self.xi_cols = columns[layout.columns("thermostat")] if layout.has("thermostat") else []
        self.has_momentum = bool(self.r_cols)
        # simplex targets keep omega = theta / sum(theta): box, marginals and scores are about that view
        self._view = getattr(pot, "theta_view", None)

        # scored histogram (joint for dim <= 2) and the plotted marginals share these edges
        e = edges_for(pot)
        self.edges = [e] if pot.dim == 1 else list(e) if pot.dim == 2 else [np.linspace(*pot.box[0], 101)]
        if pot.dim > 2:
            self.edges.append(np.linspace(*pot.box[1], 101))
        self.masses = bin_masses(pot, self.edges if pot.dim == 2 else self.edges[:1])
        self._lo = [float(x[0]) for x in self.edges]
        self._nb = [len(x) - 1 for x in self.edges]
        self._inv = [nb / (float(x[-1]) - float(x[0])) for nb, x in zip(self._nb, self.edges)]
        self._widths = [x[1] - x[0] for x in self.edges]     # the histograms' bin widths (read every frame)
        # cells of a group's grid of samples (see _counts): the scored histogram's, each coordinate's outside bin too
        self._cells_per_group = (self._nb[0] + 1) * (self._nb[1] + 1 if self.dim == 2 else 1)
        self.marg_counts = [np.zeros(nb) for nb in self._nb]
        self.joint_counts = np.zeros(self.masses.shape)
        self.joint_outside = 0.0
        self.kept = 0                     # live states accumulated (per coordinate: inside + outside)
        # the scored histogram's counts per group of chains (chain i in group i mod G, the outside bin last): groups
        # of independent chains are independent, so their spread is the histogram's Monte Carlo error, whatever the
        # chains' autocorrelation, bin by bin (see noise_floor)
        self.groups = min(FLOOR_GROUPS, self.chains // 2)
        self._group_of = np.arange(self.chains) % max(self.groups, 1)
        self._group_counts = np.zeros((max(self.groups, 1), self.masses.size + 1))   # see group_counts
        self._group_cells: list[np.ndarray] = []   # cells in the groups' grids of samples not counted there yet
        self._group_pending = 0
        self.samples = KeptSamples(self.chains)   # what the downloads hold

        # a few highlighted chains: their new positions since the view last asked
        self.path_chains = np.arange(min(int(n_paths), self.chains))
        # rows (t, theta_1[, theta_2][, r] per highlighted chain) since the view last took them, its last path_cap
        # rows what it takes: an array the frames' rows are written into (see _row_slots)
        self._rows = np.empty((0, 1 + self.path_chains.size * self.path_width))
        self._n_rows = 0
        cols = [*range(self.plot_dims), *self.r_cols[:1]]   # the first chains' columns: a slice where they follow
        self._path_cols = slice(cols[0], cols[-1] + 1) if cols == list(range(cols[0], cols[-1] + 1)) else cols
        self.path_cap = 2000

        # ESS of theta_1 from a short trace of the first chains (cheap, refreshed now and then)
        self._ess_chains = min(int(ess_chains), self.chains)
        self._ess_buf = np.zeros((int(ess_len), self._ess_chains))
        self._ess_n = 0
        self._ess_cache = (float("nan"), float("nan"))
        self._ess_at = -1
        self._floor = (-1, float("nan"))      # (step it was computed at, KL noise floor)
        self._exact_sd = None                  # the exact law's standard deviation of θ₁ (see spread)
        self._exact_bins = None                # see exact_bins
        self.error: str | None = None
        self.log_marginal = None
        self._escaped = (0, -1)            # (chains escaped at the last check, its step)
        self._all_alive = np.ones(self.chains, bool)
        self._steps_groups = self._steps_base = np.zeros(0, np.intp)
        self._states = None                # a frame's states (see _frame_states)
        self._record_path()

    def enable_log_marginal(self) -> bool:
        """Also histogram log10 of the smallest component (sparse Dirichlet: the SCIR paper's point is
        how samplers treat components near zero). Needs an exact marginal for that component."""
        if self.dim < 3 or self.pot.start is None:
            return False
        k = int(np.argmin(np.abs(np.asarray(self.pot.start, float))))
        marg = self.pot.marginals.get(k)
        if marg is None:
            return False
        g = np.logspace(-60, 0, 6001)
        with np.errstate(all="ignore"):
            dens = np.nan_to_num(np.asarray(marg(g), float) * g * np.log(10.0))   # density of log10(omega)
        lg = np.log10(g)
        cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(lg))])
        if cdf[-1] <= 0:
            return False
        cdf /= cdf[-1]
        lo, hi = np.interp([1e-3, 1 - 1e-5], cdf, lg)
        edges = np.linspace(np.floor(lo), min(np.ceil(hi), 0.0), 61)
        xs = np.linspace(edges[0], edges[-1], 400)
        with np.errstate(all="ignore"):
            exact = np.nan_to_num(np.asarray(marg(10.0 ** xs), float) * 10.0 ** xs * np.log(10.0))
        self.log_marginal = dict(index=k, edges=edges, counts=np.zeros(60), x=xs, exact=exact,
                                 inv=60 / (edges[-1] - edges[0]))
        return True

    def theta_of(self, z: np.ndarray) -> np.ndarray:
        th = z[:, : self.dim]
        return th if self._view is None else self._view(th)

    # -- stepping --------------------------------------------------------------------
    @property
    def t(self) -> int:
        return self.ens.t

    @property
    def n_diverged(self) -> int:
        return self.ens.n_diverged

    @property
    def alive(self) -> np.ndarray:
        return self.ens.guard.alive

    def advance(self, steps: int) -> None:
        """Advance `steps` steps, accumulating as we go. Errors of the dynamics propagate
        (RecipeError, SamplerError...): the caller pauses and shows them."""
        frame = _Frame(self._frame_states(int(steps)), self.ens.guard)
        t0 = self.ens.t
        try:
            # not drawn ahead: a served process's other core serves other sessions (deploy: a process per core)
            self.ens.advance(steps, each=frame, ahead=False)
        finally:    # what was stepped is recorded and counted, also when a step raised
            if frame.n:
                self._record_steps(t0, frame)

    def _frame_states(self, steps: int) -> np.ndarray | None:
        """An array for a frame's states (steps, chains, n), kept for the next frame of as many steps; None for a
        target with a view, whose states are copied one by one as they are (see _Frame)."""
        if self._view is not None:
            return None
        if self._states is None or len(self._states) != steps:
            self._states = np.empty((steps, *self.ens.z.shape), self.ens.z.dtype)
        return self._states

    def _record_steps(self, t0: int, frame: _Frame) -> None:
        """The paths, the ESS trace, the downloads and the histograms of the frame's states of steps t0 + 1,
        t0 + 2, ..., as recording them step by step would."""
        ts = range(t0 + 1, t0 + frame.n + 1)
        zs, states, alive = frame.zs, frame.states, frame.alive
        if zs is None:
            for t, z in zip(ts, states):
                self._record_path(z, t)
                self._record_ess(z)
        else:
            zs = states = zs[: frame.n]
            self._record_paths(ts, zs)
            self._record_ess_steps(zs)
        # the steps kept: past burn-in, at multiples of thin (the first one after both t0 and burn, then every thin-th)
        due = range((max(self.burn, t0) // self.thin + 1) * self.thin - t0 - 1, frame.n, self.thin)
        if not due:
            return
        for i in due:
            self.samples.offer(ts[i], states[i], alive.get(i, self._all_alive))
        if zs is not None and not alive:
            # binned once for all the steps, as they lie (a view): the per-call cost of the binning is most of it
            self._accumulate(zs[due.start::self.thin], self._groups_of_steps(len(due)))
            return
        kept, groups = [], []
        for i in due:
            th = self.theta_of(states[i])
            if i in alive:
                th, group = th[alive[i]], self._group_of[alive[i]]
            else:
                group = self._group_of
            kept.append(th)
            groups.append(group)
        one = len(kept) == 1
        self._accumulate(kept[0] if one else np.concatenate(kept), groups[0] if one else np.concatenate(groups))

    def _groups_of_steps(self, k: int) -> np.ndarray:
        """The group of each chain, for k steps' states one after the other (kept for the next frame of as many,
        with the start of each one's cells in the groups' grids: see _counts)."""
        if self._steps_groups.size != k * self.chains:
            self._steps_groups = np.tile(self._group_of, k)
            self._steps_base = self._steps_groups * self._cells_per_group
        return self._steps_groups

    def _live_theta(self) -> np.ndarray:
        th = self.theta_of(self.ens.z)
        return th if self.ens.n_diverged == 0 else th[self.ens.guard.alive]

    def _cells(self, theta: np.ndarray) -> list[np.ndarray]:
        """Each sample's bin on each plotted coordinate as `dg.uniform_bin_index` finds it, but the coordinate's bin
        count where it is outside (NaN too): a bincount of it is the marginal with the outside bin last. theta:
        (..., coordinates), the samples in its leading axes (a frame's states (steps, chains, n) as they lie). Made
        in place in one new array a coordinate (it took five temporaries: docs/notes/app-frames.md)."""
        cells = []
        for i, (lo, inv, nb) in enumerate(zip(self._lo, self._inv, self._nb)):
            f = np.subtract(theta[..., i], lo).ravel()
            f *= inv
            np.fmin(f, nb, out=f)                 # beyond the last bin, and NaN (which fmin passes over): nb
            np.copyto(f, nb, where=f < 0)        # before the first: nb; f >= 0 now, so truncation is floor
            cells.append(f.astype(np.intp))
        return cells

    def _counts(self, theta: np.ndarray, groups: np.ndarray | None = None):
        """(marginal counts per plotted coordinate, the scored histogram's counts, its count outside the box); with
        groups, each sample's group and cell are also kept for `group_counts`."""
        cells = self._cells(theta)
        if self.dim == 2:
            # the joint with each coordinate's outside bin: the scored histogram and both marginals in one bincount
            nx, ny = self._nb
            cell = cells[0]
            cell *= ny + 1
            cell += cells[1]
            grid = np.bincount(cell, minlength=(nx + 1) * (ny + 1)).reshape(nx + 1, ny + 1)
            joint = grid[:nx, :ny]
            marg = [grid[:nx].sum(axis=1), grid[:, :ny].sum(axis=0)]
            # inside: θ₁'s marginal less its samples outside on θ₂ (sums of 50, not of the joint's 2500)
            outside = float(cell.size - (int(marg[0].sum()) - int(grid[:nx, ny].sum())))
        else:   # the scored histogram is theta_1's marginal, its outside bin last
            cell = cells[0]
            scored = np.bincount(cell, minlength=self._nb[0] + 1)
            joint, outside = scored[:-1].reshape(self.masses.shape), float(scored[-1])
            marg = [joint] + [np.bincount(c, minlength=nb + 1)[:nb] for c, nb in zip(cells[1:], self._nb[1:])]
        if groups is not None and self.groups > 1:
            # each sample's cell in its group's grid, counted when group_counts is read or enough wait
            base = self._steps_base if groups is self._steps_groups else groups * self._cells_per_group
            self._group_cells.append(np.add(cell, base, out=cell))    # cell is counted: its array is reused
            self._group_pending += cell.size
            if self._group_pending > GROUP_FOLD:
                self._fold_groups()
        return marg, joint, outside

    @property
    def group_counts(self) -> np.ndarray:
        """The scored histogram's counts per group of chains (groups, bins + the outside bin), with the samples
        kept since the last read: counted when read (every `every` steps, noise_floor), not every frame, as a pass
        over groups x bins costs more than binning a frame's samples (2-D: 16 x 2501 against 5 x 1000)."""
        if self._group_cells:
            self._fold_groups()
        return self._group_counts

    def _fold_groups(self) -> None:
        cells = self._group_cells[0] if len(self._group_cells) == 1 else np.concatenate(self._group_cells)
        self._group_cells, self._group_pending = [], 0
        n_groups = self._group_counts.shape[0]
        if self.dim == 2:
            nx, ny = self._nb
            grid = np.bincount(cells, minlength=n_groups * (nx + 1) * (ny + 1)).reshape(n_groups, nx + 1, ny + 1)
            # the joint's bins in place (a view of the counts: a split last axis), the outside from the grid's edges
            self._group_counts[:, :-1].reshape(n_groups, nx, ny)[...] += grid[:, :nx, :ny]
            self._group_counts[:, -1] += grid[:, nx].sum(axis=1) + grid[:, :nx, ny].sum(axis=1)
        else:
            size = self._nb[0] + 1
            self._group_counts += np.bincount(cells, minlength=n_groups * size).reshape(n_groups, size)

    def _accumulate(self, theta: np.ndarray, groups: np.ndarray | None = None) -> None:
        """Add these live states (theta's rows, or a frame's states (steps, chains, n)) to the histograms."""
        marg, joint, outside = self._counts(theta, groups)
        for acc, c in zip(self.marg_counts, marg):
            acc += c
        self.joint_counts += joint
        self.joint_outside += outside
        self.kept += theta.size // theta.shape[-1]
        if self.log_marginal is not None:
            self.log_marginal["counts"] += self._log_counts(theta)

    def _log_counts(self, theta):
        lm = self.log_marginal
        with np.errstate(all="ignore"):
            x = np.log10(theta[..., lm["index"]])
        idx = dg.uniform_bin_index(x, lm["edges"][0], lm["inv"], 60)
        return np.bincount(idx[idx >= 0], minlength=60)

    def _record_path(self, z: np.ndarray | None = None, t: int | None = None) -> None:
        """The highlighted chains' row of the state z at step t (by default the ensemble's, now)."""
        z, t = (self.ens.z, self.ens.t) if z is None else (z, t)
        if self._view is None:
            self._record_paths([t], z[None])
            return
        zp = z[self.path_chains]
        th = self.theta_of(zp)
        cols = [th[:, i] for i in range(self.plot_dims)]
        if self.has_momentum:
            cols.append(zp[:, self.r_cols[0]])
        self._append_rows(np.concatenate([[float(t)], np.stack(cols, axis=1).ravel()])[None])

    def _record_paths(self, ts, zs: np.ndarray) -> None:
        """Rows (t, the highlighted chains' columns) of the states zs (steps, chains, n) at steps ts: the
        state's own columns, in one index for all the steps."""
        k = min(len(zs), self.path_cap)          # the view takes the last path_cap rows: only those are written
        rows = self._row_slots(k)
        rows[:, 0] = np.arange(ts[-k], ts[-1] + 1)
        rows[:, 1:] = zs[len(zs) - k:, : self.path_chains.size, self._path_cols].reshape(k, -1)

    def _append_rows(self, rows: np.ndarray) -> None:
        rows = rows[len(rows) - min(len(rows), self.path_cap):]
        self._row_slots(len(rows))[:] = rows

    def _row_slots(self, k: int) -> np.ndarray:
        """The rows to write k new path rows in (k <= path_cap), after those kept. When they do not fit, the
        rows a take would still return (the last path_cap - k) move to the front, into a larger array while it is
        smaller than 2 path_cap: a frame's rows are written in place, and copied once when the view takes them."""
        n, buf = self._n_rows, self._rows
        if n + k > len(buf):
            keep = min(n, self.path_cap - k)
            size = max(len(buf), min(2 * self.path_cap, max(16, 2 * (keep + k))))
            new = buf if size == len(buf) else np.empty((size, buf.shape[1]))
            new[:keep] = buf[n - keep: n]
            self._rows, buf, n = new, new, keep
        self._n_rows = n + k
        return buf[n: n + k]

    def _record_ess(self, z: np.ndarray) -> None:
        self._ess_buf[self._ess_n % len(self._ess_buf)] = self.theta_of(z[: self._ess_chains])[:, 0]
        self._ess_n += 1

    def _record_ess_steps(self, zs: np.ndarray) -> None:
        """`_record_ess` of each state of zs (steps, chains, n) in turn, for a target without a view: the last
        len(buffer) of them at most, in the buffer's slots from the next one on, round to its start."""
        size, k = len(self._ess_buf), len(zs)
        m = min(k, size)
        src = zs[k - m:, : self._ess_chains, 0]
        at = (self._ess_n + k - m) % size
        first = min(size - at, m)
        self._ess_buf[at: at + first] = src[:first]
        self._ess_buf[: m - first] = src[first:]
        self._ess_n += k

    # -- what the views read ---------------------------------------------------------
    @property
    def accumulating(self) -> bool:
        return self.kept > 0

    def histograms(self):
        """Per plotted coordinate: (edges, density on the true density scale), and the joint
        counts and outside mass that KL/TV use: accumulated, or the ensemble now before burn-in."""
        if self.kept:
            marg, joint, outside, n = self.marg_counts, self.joint_counts, self.joint_outside, self.kept
        else:
            theta = self._live_theta()
            marg, joint, outside = self._counts(theta)
            n = theta.shape[0]
        dens = [c / (max(n, 1) * w) for c, w in zip(marg, self._widths)]
        if self.log_marginal is not None:
            lm = self.log_marginal
            c = lm["counts"] if self.kept else self._log_counts(self._live_theta())
            dens.append(c / (max(n, 1) * (lm["edges"][1] - lm["edges"][0])))
        return dens, joint, outside

    def take_path_points(self) -> np.ndarray:
        """New rows (t, then per highlighted chain its plotted coordinates [and r]) since last call."""
        n = self._n_rows
        rows = self._rows[max(n - self.path_cap, 0): n].copy() if n else np.zeros((0, 1))
        self._n_rows = 0
        return rows

    @property
    def path_width(self) -> int:
        return self.plot_dims + (1 if self.has_momentum else 0)

    def ensemble_points(self) -> dict:
        """The first max_points chains' current theta (and r for 1-D targets with momentum); diverged
        chains are NaN (not drawn), so row k stays chain k and the highlighted chains stay the first rows."""
        x, y = self.ensemble_xy()
        return {"x": x, "y": y}

    def ensemble_xy(self) -> np.ndarray:
        """ensemble_points as one (2, points) array, x then y (the view masks and casts both in one go)."""
        z = self.ens.z[: self.max_points]
        th = self.theta_of(z)
        out = np.empty((2, len(z)), th.dtype)
        out[0] = th[:, 0]
        if self.dim >= 2:
            out[1] = th[:, 1]
        elif self.has_momentum:
            out[1] = z[:, self.r_cols[0]]
        else:
            np.multiply(out[0], 0, out=out[1])
        if not self.ens.guard._none_frozen:
            alive = self.ens.guard.alive[: self.max_points]
            out[:, ~alive] = np.nan
        return out

    def ess(self, every: int = 100) -> tuple[float, float]:
        """(ESS of the histogrammed θ₁ samples, ESS per sample), refreshed every `every` steps.

        Estimated from the last steps of the first chains (Stan's multi-chain estimator); the
        efficiency per sample then scales to everything accumulated so far.
        """
        n = min(self._ess_n, len(self._ess_buf))
        if n < 16:
            return float("nan"), float("nan")
        if self._ess_at < 0 or self.ens.t - self._ess_at >= every:
            k = self._ess_n % len(self._ess_buf)
            trace = self._ess_buf[:n] if n < len(self._ess_buf) else np.roll(self._ess_buf, -k, axis=0)
            with np.errstate(all="ignore"):
                e = dg.ess(trace)
            eff = e / trace.size if np.isfinite(e) else float("nan")
            self._ess_at = self.ens.t
            self._ess_cache = (eff, eff)
        eff = self._ess_cache[1]
        total = eff * (self.kept if self.kept else self._live_theta().shape[0])
        return float(total), float(eff)

    def n_escaped(self, every: int = 100) -> int | None:
        """Chains alive now at an energy no draw of the target plausibly has (`accuracy.escaped_chains` on the
        current states), checked every `every` steps: U is a pass over the data for a data posterior. The count is
        of the chains now, not of any chain ever: over many checks, "ever" would collect false alarms. None where
        U is not U of the plotted θ (a simplex target's ω)."""
        count, at = self._escaped
        if at < 0 or self.t - at >= every:
            mask = escaped_chains(self.pot, self.ens.z[None, :, : self.dim], alive=self.alive)
            count = None if mask is None else int(mask.sum())
            self._escaped = (count, self.t)
        return count

    def noise_floor(self, every: int = 100) -> float:
        """The KL an unbiased sampler would show with as much information as this histogram holds: what "at the
        noise floor" is measured against. Each bin's Monte Carlo variance is measured from the spread of the
        histograms of FLOOR_GROUPS groups of independent chains (`accuracy.floor_from_counts`, a group as one
        chain), so the chains' autocorrelation is counted bin by bin, as it is. (It was the floor of as many
        independent draws as θ₁'s ESS, which is θ₁'s mode-switching time: ~6× the KL an unbiased sampler shows
        on Chen et al.'s double well, an "accurate" for KLs several times too large.) NaN, "not decidable yet":
        fewer than MIN_GROUPS groups (too few chains), or too few samples to tell any group's histogram.
        Refreshed every `every` steps."""
        if self.groups < MIN_GROUPS or not self.kept:
            return float("nan")
        if self._floor[0] < 0 or self.t - self._floor[0] >= every:
            n = self.group_counts.sum(axis=1)
            value = float("nan")
            if n.min() >= MIN_GROUP_SAMPLES:
                q = self.exact_bins[0]
                # a diverged chain leaves its group a little short: each group's counts as shares of the same size
                value = floor_from_counts(self.group_counts * (n.mean() / n)[:, None], n.mean(), q)
            self._floor = (self.t, value)
        return self._floor[1]

    @property
    def exact_bins(self) -> tuple[np.ndarray, np.ndarray]:
        """The exact bin masses with the outside bin's, and those floored as the KL takes them (`dg.exact_bins`): the
        target's, fixed for the run, so made once (KL and TV, and the noise floor, read them)."""
        if self._exact_bins is None:
            self._exact_bins = dg.exact_bins(self.masses)
        return self._exact_bins

    def spread(self, dens: np.ndarray) -> float:
        """The samples' standard deviation of the first plotted coordinate over the exact one (from the exact bin
        masses): above 1 the histogram is wider than the exact density, below 1 narrower."""
        e = self.edges[0]
        p = np.asarray(dens, float)
        if self._exact_sd is None:      # the target's, fixed for the run: once (NaN where it cannot be told)
            self._mid = mid = 0.5 * (e[1:] + e[:-1])
            q = self.masses if self.masses.ndim == 1 else self.masses.reshape(len(mid), -1).sum(axis=1)
            ok = self.dim <= 2 and len(q) == len(mid) and q.sum() > 0
            self._exact_sd = _sd(q, mid) if ok else float("nan")
        exact = self._exact_sd
        if not exact > 0 or p.sum() <= 0:
            return float("nan")
        return _sd(p, self._mid) / exact

    def metrics(self) -> dict:
        """Scalars for the metrics panel."""
        dens, joint, outside = self.histograms()
        kl, tv = dg.counts_kl_tv(joint, outside, self.masses, exact=self.exact_bins)
        ess, eff = self.ess()
        n = self.kept if self.kept else max(int(self.alive.sum()), 1)
        out = dict(t=self.t, chains=self.chains, dim=self.dim, diverged=self.n_diverged, kl=kl, tv=tv, ess=ess,
                   ess_per=eff, kept=self.kept, accumulating=self.accumulating, burn=self.burn,
                   escaped=self.n_escaped(), outside=outside / n,
                   floor=self.noise_floor() if self.accumulating else float("nan"), spread=self.spread(dens[0]))
        alive = self.ens.guard.alive
        if self.xi_cols:
            out["xi"] = float(self.ens.z[alive][:, self.xi_cols].mean()) if alive.any() else float("nan")
        if self.has_momentum and (self.xi_cols or self.sampler.spec.family == "thermostat"):
            r = self.ens.z[alive][:, self.r_cols]
            out["temperature"] = float(dg.kinetic_temperature(r).mean()) if len(r) else float("nan")
        if self.ens.stats.proposals:
            out["acceptance"] = self.ens.stats.acceptance_rate
        return out
