"""KL and TV to the exact density of every recipe sampler at its defaults, gradient noise V = 1.

The figures behind issue 2's "KL <= 0.01 with >= 10^6 kept samples" (the same runs as
tests/test_statistical.py), printed as a table.

    python benchmarks/accuracy.py
"""
from samplers.accuracy import kl_noise_floor, score
from samplers.registry import REGISTRY, build_sampler, sampler_names
from samplers.run import run
from samplers.targets.presets import get_potential


def main():
    print(f"{'sampler':14s} {'potential':12s} {'KL':>8s} {'TV':>7s} {'MC floor':>9s} {'kept':>9s}")
    for name in sampler_names():
        if REGISTRY[name].recipe is None or REGISTRY[name].family == "simplex":   # targets on the simplex only
            continue
        for pname in ("gaussian", "double-well", "banana"):
            pot = get_potential(pname)
            s = build_sampler(name, pot, V=1.0)
            res = run(s, 500, 2000, burn=2000, seed=11)
            sc = score(pot, res.theta)
            print(f"{name:14s} {pname:12s} {sc['kl']:8.4f} {sc['tv']:7.4f} "
                  f"{kl_noise_floor(pot, res.theta):9.4f} {res.theta.shape[0] * res.theta.shape[1]:9d}")


if __name__ == "__main__":
    main()
