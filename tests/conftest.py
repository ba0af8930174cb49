import numpy as np
import pytest

from samplers.registry import build_sampler
from samplers.targets.presets import get_potential


# the browser tests' server and Chromium, one of each per test module (tests/app_browser_support.py)
@pytest.fixture(scope="module")
def server():
    from app_browser_support import AppServer
    srv = AppServer().wait()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser():
    from app_browser_support import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def make_sampler():
    def make(name, potential="gaussian", V=1.0, batch=None, **params):
        pot = get_potential(potential) if isinstance(potential, str) else potential
        return build_sampler(name, pot, V, batch, **params)
    return make


def fd_grad(U, theta, h=1e-6):
    """Central finite differences of U at theta (N, d)."""
    g = np.zeros_like(theta)
    for i in range(theta.shape[1]):
        e = np.zeros(theta.shape[1])
        e[i] = h
        g[:, i] = (U(theta + e) - U(theta - e)) / (2 * h)
    return g


def run_reproduction(name, tmp_path):
    """A reproduction at its quick size into tmp_path: checks its files, returns its claims by text."""
    import json
    import os

    from samplers.reproduce import reproduce
    with open(os.devnull, "w") as sink:
        summary = reproduce(name, out_dir=tmp_path, seed=0, quick=True, stream=sink)
    for key in ("png", "svg", "csv", "json"):
        assert (tmp_path / summary["files"].get(key, f"{name}.json")).exists(), key
    return {c["text"]: c for c in json.loads((tmp_path / f"{name}.json").read_text())["claims"]}


def assert_claims_hold(claims, *starts):
    """Each named claim (by the start of its text, matching exactly one) came out as holding."""
    for start in starts:
        hits = [c for text, c in claims.items() if text.startswith(start)]
        assert len(hits) == 1, (start, list(claims))
        assert hits[0]["holds"] is True, hits[0]["evidence"]

