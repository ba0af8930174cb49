"""The command-line runs whose outputs tests/golden/ holds, as written by the layout before the redesign.

tests/test_golden.py reruns each one and compares bytes; `python tests/golden_cases.py` rewrote the
files once, from the commit before the redesign (see docs/notes/redesign.md). Small sizes: the point is
the random stream and the arithmetic, not the statistics.
"""
from __future__ import annotations

SAMPLE = {
    "sgld-gaussian": ["--sampler", "sgld", "--potential", "gaussian", "--grad-noise", "1"],
    "sgld-minibatch": ["--sampler", "sgld", "--potential", "logistic", "--batch", "50", "--set", "Bhat=auto",
                       "--set", "eps=0.0001"],
    "sgrld-double-well": ["--sampler", "sgrld", "--potential", "double-well", "--grad-noise", "1"],
    "sghmc-double-well": ["--sampler", "sghmc", "--potential", "double-well", "--grad-noise", "4",
                          "--set", "eps=0.1", "--set", "C=3"],
    "sghmc-splitting": ["--sampler", "sghmc", "--potential", "banana", "--set", "integrator=splitting"],
    "sghmc-naive": ["--sampler", "sghmc-naive", "--potential", "double-well", "--grad-noise", "4",
                    "--set", "resample_every=7"],
    "sgnht-banana": ["--sampler", "sgnht", "--potential", "banana", "--grad-noise", "1"],
    "msgnht-splitting": ["--sampler", "msgnht", "--potential", "mixture", "--set", "integrator=splitting"],
    "sgrhmc-banana": ["--sampler", "sgrhmc", "--potential", "banana", "--grad-noise", "1"],
    "sgrhmc-naive": ["--sampler", "sgrhmc-naive", "--potential", "double-well", "--grad-noise", "1"],
    "hmc-correlated": ["--sampler", "hmc", "--potential", "correlated-gaussian"],
    "qnhmc-dense": ["--sampler", "qnhmc", "--potential", "correlated-gaussian", "--set", "adapt=10"],
    "qnhmc-bfgs": ["--sampler", "qnhmc", "--potential", "double-well", "--set", "update=bfgs", "--set", "B0=1"],
    "qnhmc-lbfgs": ["--sampler", "qnhmc", "--potential", "banana", "--set", "memory=3"],
    "qnhmc-naive": ["--sampler", "qnhmc-naive", "--potential", "correlated-gaussian"],
    "scir-sparse": ["--sampler", "scir", "--potential", "sparse-dirichlet", "--batch", "10"],
    "sgrld-simplex": ["--sampler", "sgrld-simplex", "--potential", "sparse-dirichlet", "--batch", "10"],
    "sgld-typed": ["--sampler", "sgld", "--potential", "expr:x^4 - 2*x^2 + 0.3*x", "--grad-noise", "1"],
}
COMMON = ["--steps", "40", "--burn", "10", "--thin", "2", "--chains", "16", "--seed", "3"]
DIAGNOSE = ("sghmc-double-well", "sgrhmc-banana", "scir-sparse", "sgld-typed")


def sample_args(name: str, out) -> list[str]:
    return ["sample", *SAMPLE[name], *COMMON, "--out", str(out)]


def write_all(golden) -> None:
    import contextlib
    import io
    import os

    from samplers.cli import main
    from samplers.reproduce import names, reproduce

    golden.mkdir(exist_ok=True)
    buf = io.StringIO()
    assert main(["list"], out=buf) == 0
    (golden / "list.txt").write_text(buf.getvalue())
    for name in SAMPLE:
        assert main(sample_args(name, golden / f"{name}.npz"), out=io.StringIO()) == 0, name
    for name in DIAGNOSE:
        buf = io.StringIO()
        assert main(["diagnose", str(golden / f"{name}.npz")], out=buf) == 0
        (golden / f"{name}.diagnose.txt").write_text(buf.getvalue())
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        for name in names():
            reproduce(name, out_dir=golden / "reproduce", seed=0, quick=True, stream=sink)
            for path in (golden / "reproduce").glob(f"{name}.*"):
                if path.suffix != ".csv":
                    path.unlink()


if __name__ == "__main__":
    from pathlib import Path
    write_all(Path(__file__).with_name("golden"))
