"""Derived against hand-written per-example gradients (issue 29): Welling & Teh's (2011) mixture from its model file
(gradients derived by sympy, compiled by lambdify) and the same model's gradient written out in numpy, timed in one
run on the same minibatches. Prints the ratio (hand-written time / derived time: >= 0.5 is the issue's bar).

    python benchmarks/model_gradients.py [--chains 1000] [--batch 10] [--repeats 200]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from samplers.targets.modelfile import EXAMPLES, load_model_file
from samplers.targets.usermodel import DataModel


def hand_written(x) -> DataModel:
    def loglik(t, xb):
        d1, d2 = xb[..., 0] - t[..., 0], xb[..., 0] - t[..., 0] - t[..., 1]
        return np.logaddexp(-d1 * d1 / 4, -d2 * d2 / 4)

    def loglik_grad(t, xb):
        d1, d2 = xb[..., 0] - t[..., 0], xb[..., 0] - t[..., 0] - t[..., 1]
        w = 1 / (1 + np.exp(d1 * d1 / 4 - d2 * d2 / 4))       # responsibility of the first component
        return np.stack([(w * d1 + (1 - w) * d2) / 2, (1 - w) * d2 / 2], axis=-1)

    return DataModel(x, loglik, loglik_grad, lambda t: -t[:, 0] ** 2 / 20 - t[:, 1] ** 2 / 2,
                     lambda t: -t * np.array([1 / 10, 1.0]), names=["theta1", "theta2"])


def best(fn, repeats: int) -> float:
    """The fastest of `repeats` calls (the least disturbed by other work on the machine)."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chains", type=int, default=1000)
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--repeats", type=int, default=200)
    args = p.parse_args(argv)
    derived, _ = load_model_file(EXAMPLES / "welling-teh.yaml")
    hand = hand_written(derived.cols.T)
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(args.chains, 2))
    idx = rng.integers(0, derived.n, size=(args.chains, args.batch))
    np.testing.assert_allclose(derived.example_grads(theta, idx), hand.example_grads(theta, idx), rtol=1e-9)
    # interleaved, so both see the same machine
    t_derived, t_hand = [], []
    for _ in range(5):
        t_derived.append(best(lambda: derived.example_grads(theta, idx), args.repeats // 5))
        t_hand.append(best(lambda: hand.example_grads(theta, idx), args.repeats // 5))
    d, h = min(t_derived), min(t_hand)
    print(f"per-example gradients of {args.chains} chains x {args.batch} rows: derived {d * 1e3:.3f} ms, "
          f"hand-written {h * 1e3:.3f} ms; speed ratio derived/hand-written = {h / d:.2f} (issue 29 asks >= 0.5)")


if __name__ == "__main__":
    main()
