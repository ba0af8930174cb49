"""Quasi-Newton updates of an inverse-Hessian approximation B, batched over chains: BFGS (QNHMC paper
Eq. 1), symmetric rank one (Nocedal & Wright Eq. 6.25), the initial scaling (Eq. 6.20) and L-BFGS's
two-loop recursion. Pure numerics on arrays (chains, d, d) and (chains, d): no sampler in here."""
from __future__ import annotations

import numpy as np

B_CAP = 1e4                # largest inverse curvature one pair may put into B (bfgs_update, sr1_update)
SR1_SKIP = 1e-8            # N&W's threshold for a vanishing SR1 denominator


def batched_matvec(B, v):
    """B v per chain, (c, d, d) x (c, d): einsum (numpy's own loops, the same sums on every machine) for the
    small d of the lab and the goldens, batched matmul (BLAS, faster) for large d."""
    if B.shape[-1] <= 8:
        return np.einsum("cij,cj->ci", B, v)
    return (B @ v[:, :, None])[:, :, 0]


def _bfgs_terms(B, s, y, ok):
    """Which chains' pairs Eq. (1) may use, with rho = 1 / s^T y, c = rho^2 y^T B y + rho and B y."""
    sy = np.einsum("ci,ci->c", s, y)
    By = batched_matvec(B, y)
    yBy = np.einsum("ci,ci->c", y, By)
    ok = ok & (sy > 0) & np.isfinite(sy) & np.isfinite(yBy)     # NaN anywhere in s or y fails here
    rho = np.where(ok, 1.0 / np.where(ok, sy, 1.0), 0.0)
    coef = rho ** 2 * np.where(ok, yBy, 0.0) + rho
    # A pair from a nearly flat stretch of U (an inflection point) has s^T y ~ 0+ and would blow B up;
    # past B_CAP every later trajectory diverges, so such a pair is skipped (coef |s|^2 bounds the
    # largest entry of the rho s s^T part).
    ok &= coef * np.einsum("ci,ci->c", s, s) < B_CAP
    return ok, rho, coef, By


def bfgs_update(B, s, y, ok):
    """Eq. (1) for every chain where `ok`: B <- (I - rho s y^T) B (I - rho y s^T) + rho s s^T.

    B (chains, d, d) symmetric; s, y (chains, d). Expanded as a rank-two correction,
    B + s (c s - rho By)^T - rho By s^T with c = rho^2 y^T B y + rho: two outer products, written as ufunc
    products so that no BLAS kernel chooses the order of the sums (a matmul with an inner dimension of 2
    rounds differently on each kernel, and BFGS trajectories amplify the last bit: tests/test_golden.py).
    """
    ok, rho, coef, By = _bfgs_terms(B, s, y, ok)
    # a skipped pair may hold NaN (a trajectory that blew up): zero it so that nothing reaches B
    s0 = np.where(ok[:, None], s, 0.0)
    By0 = np.where(ok[:, None], By, 0.0)
    rho, coef = np.where(ok, rho, 0.0)[:, None], np.where(ok, coef, 0.0)[:, None]
    return B + s0[:, :, None] * (coef * s0 - rho * By0)[:, None, :] + By0[:, :, None] * (-rho * s0)[:, None, :]


def sr1_update(B, s, y, ok):
    """Symmetric rank one for the inverse (Nocedal & Wright Eq. 6.25): B <- B + r r^T / r^T y, r = s - B y.

    On a quadratic with exact pairs the error E = B - Sigma becomes E - (E y)(E y)^T / (y^T E y): E loses the
    part that y sees and nothing else moves, whereas Eq. (1) maps E to P^T E P and can rotate an unseen
    deficit into the directions the chain is moving along (docs/notes/qnhmc.md). r^T y may have either
    sign, so B may be indefinite; C^2 is what the dynamics feel, and any symmetric C keeps Eq. (7) exact.
    Skipped: |r^T y| < SR1_SKIP |r| |y| (N&W Eq. 6.26), a non-finite pair, and a correction above B_CAP.
    """
    By = batched_matvec(B, y)
    r = s - By
    ry = np.einsum("ci,ci->c", r, y)
    rr = np.einsum("ci,ci->c", r, r)
    yy = np.einsum("ci,ci->c", y, y)
    ok = (ok & np.isfinite(ry) & np.isfinite(rr)
          & (np.abs(ry) > SR1_SKIP * np.sqrt(rr * yy)) & (rr < B_CAP * np.abs(ry)))
    r0 = np.where(ok[:, None], r, 0.0)
    coef = np.where(ok, 1.0 / np.where(ok, ry, 1.0), 0.0)
    return B + coef[:, None, None] * r0[:, :, None] * r0[:, None, :]




def initial_scaling(B, s, y, ok, fresh):
    """Nocedal & Wright Eq. (6.20): B = (s^T y / y^T y) I before the first update of a `fresh` chain.

    On a quadratic s^T y / y^T y is a Rayleigh quotient of the inverse Hessian, so B starts at the
    target's scale instead of the units' (Algorithm 2's I). Only a pair that passes Eq. (1)'s checks
    (s^T y > 0, B_CAP) sets the scale, whichever update follows (an s^T y ~ 0+ pair would make B huge;
    SR1 then skips that same pair, whose r^T y is 0). Returns B and which chains are still fresh.
    """
    sy = np.einsum("ci,ci->c", s, y)
    yy = np.einsum("ci,ci->c", y, y)
    valid = fresh & (sy > 0) & (yy > 0) & np.isfinite(sy) & np.isfinite(yy)
    gamma = np.where(valid, sy / np.where(valid, yy, 1.0), 1.0)
    scaled = gamma[:, None, None] * np.eye(B.shape[-1])
    use = valid & _bfgs_terms(scaled, s, y, ok)[0]
    return np.where(use[:, None, None], scaled, B), fresh & ~use


class LBFGSOperator:
    """C v for the frozen memory of a proposal: Nocedal & Wright's two-loop recursion, per chain.

    S, Y (chains, m, d), oldest pair first; unused slots are zero and drop out (rho = 0).
    H0 = gamma I with gamma = s^T y / y^T y of the newest pair (N&W Eq. 7.20), b0 I when empty.
    """

    def __init__(self, S, Y, b0: float = 1.0):
        self.S, self.Y = S, Y
        sy = np.einsum("cmd,cmd->cm", S, Y)
        yy = np.einsum("cmd,cmd->cm", Y, Y)
        used = sy > 0
        self.rho = np.where(used, 1.0 / np.where(used, sy, 1.0), 0.0)
        newest = np.where(used.any(1), S.shape[1] - 1 - np.argmax(used[:, ::-1], axis=1), -1)
        pick = np.clip(newest, 0, None)
        rows = np.arange(S.shape[0])
        self.gamma = np.where(newest >= 0, sy[rows, pick] / np.where(used[rows, pick], yy[rows, pick], 1.0), b0)

    def __call__(self, v):
        S, Y, rho = self.S, self.Y, self.rho
        m = S.shape[1]
        q = v.copy()
        alpha = np.empty((v.shape[0], m))
        for k in range(m - 1, -1, -1):
            alpha[:, k] = rho[:, k] * np.einsum("cd,cd->c", S[:, k], q)
            q -= alpha[:, k, None] * Y[:, k]
        r = self.gamma[:, None] * q
        for k in range(m):
            beta = rho[:, k] * np.einsum("cd,cd->c", Y[:, k], r)
            r += S[:, k] * (alpha[:, k] - beta)[:, None]
        return r

    def dense(self):
        """C as a matrix per chain (for display and tests)."""
        c, _, d = self.S.shape
        eye = np.broadcast_to(np.eye(d), (c, d, d))
        return np.stack([self(eye[:, :, j]) for j in range(d)], axis=2)


def lbfgs_append(S, Y, s, y, ok):
    """Push the pair (s, y) into each chain's memory where ok (and s^T y > 0), dropping the oldest."""
    sy = np.einsum("ci,ci->c", s, y)
    # a NaN pair fails the comparisons; the inverse curvature along s must stay below B_CAP
    ok = ok & (sy > 0) & (np.einsum("ci,ci->c", s, s) < B_CAP * sy)
    S2 = np.concatenate([S[:, 1:], s[:, None]], axis=1)
    Y2 = np.concatenate([Y[:, 1:], y[:, None]], axis=1)
    w = ok[:, None, None]
    return np.where(w, S2, S), np.where(w, Y2, Y)


