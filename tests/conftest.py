import numpy as np
import pytest

from samplers.gradients import make_oracle
from samplers.potentials import get_potential
from samplers.registry import Sampler


@pytest.fixture
def make_sampler():
    def make(name, potential="gaussian", V=1.0, batch=None, **params):
        pot = get_potential(potential) if isinstance(potential, str) else potential
        return Sampler(name, pot, make_oracle(pot, V, batch), **params)
    return make


def fd_grad(U, theta, h=1e-6):
    """Central finite differences of U at theta (N, d)."""
    g = np.zeros_like(theta)
    for i in range(theta.shape[1]):
        e = np.zeros(theta.shape[1])
        e[i] = h
        g[:, i] = (U(theta + e) - U(theta - e)) / (2 * h)
    return g
