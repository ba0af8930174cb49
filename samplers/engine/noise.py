"""The injected noise of one step, N(0, eps (2D - eps B^)), from per-coordinate variances or covariances."""
from __future__ import annotations

import numpy as np

from samplers.engine.symbols import RecipeError


def scaled_noise(var, xi, what="2D - eps*Bhat"):
    """sqrt(var) * xi for per-coordinate variances; raises if one is clearly negative."""
    low = var.min(initial=0.0)
    if low < -1e-10 * max(float(np.abs(var).max(initial=0.0)), 1e-300):
        raise RecipeError(f"{what} is not positive semidefinite: variance {low:.4g}"
                          " (try a smaller step size or a smaller Bhat)")
    return np.sqrt(np.clip(var, 0.0, None)) * xi


def correlated_noise(cov, xi, what):
    """L xi with L L^T = cov, per chain (cov (k, k) or (N, k, k)); raises if cov is not PSD."""
    diag = np.diagonal(cov, axis1=-2, axis2=-1)
    scale = max(float(np.abs(cov).max(initial=0.0)), 1e-300)
    tol = -1e-10 * scale
    if not np.any(cov - diag[..., :, None] * np.eye(cov.shape[-1])):
        if diag.min(initial=0.0) < tol:
            i = int(np.unravel_index(np.argmin(diag), diag.shape)[-1])
            raise RecipeError(f"{what} is not positive semidefinite: its diagonal entry {i} is {diag.min():.4g}"
                              " (try a smaller step size or a smaller Bhat)")
        return np.sqrt(np.clip(diag, 0.0, None)) * xi
    w, v = np.linalg.eigh(cov)
    if w.min() < tol:
        raise RecipeError(f"{what} is not positive semidefinite: eigenvalue {w.min():.4g}"
                          " (try a smaller step size or a smaller Bhat)")
    root = v * np.sqrt(np.clip(w, 0, None))[..., None, :]
    return xi @ root.T if root.ndim == 2 else np.einsum("nij,nj->ni", root, xi)
