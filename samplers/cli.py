"""Command line: `python -m samplers list | sample | diagnose | check | reproduce`.

Every error a user can cause (bad arguments, unknown names, invalid expressions, malformed design
files, unstable settings) ends in one line on stderr and exit status 2, never a traceback. `check`
exits 1 when a design that builds fails its stationarity check.
"""
from __future__ import annotations

import argparse
import io
import json
import lzma
import sys
import time
import tokenize
import warnings
import zipfile
import zlib

import numpy as np

from samplers import diagnostics as dg
from samplers.accuracy import effective_size, escaped_chains, marginal_distances, score
from samplers.design import check, design_sampler, example_names, load_design
from samplers.engine.symbols import RecipeError
from samplers.gradients import SAMPLING, GradientError, estimator_names, make_oracle
from samplers.registry import REGISTRY, VARIANTS, build_sampler, declarations, parameters_markdown, sampler_names
from samplers.run import DTYPES, run
from samplers.sampler import SamplerError
from samplers.stepsize import fit_eps
from samplers.targets.potential import PotentialError
from samplers.targets.presets import get_potential, parse_box, preset_names

# TypeError as in the lab: a parameter's checks may compare what the user left empty (--set eps=) with a number
USER_ERRORS = (PotentialError, SamplerError, RecipeError, GradientError, ValueError, OSError, KeyError, TypeError)


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        if message == "argument --box: expected one argument":
            message += " (a box starting with '-' is written --box=-10,10,-8,8)"
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m samplers",
                description="Stochastic-gradient MCMC samplers built on the complete recipe.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    lst = sub.add_parser("list", help="every sampler and potential, one line each")
    lst.add_argument("--params", action="store_true",
                     help="instead, the table of every sampler parameter (docs/parameters.md), in Markdown")
    s = sub.add_parser("sample", help="run chains and write their samples to an .npz file",
                       epilog=set_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    which = s.add_mutually_exclusive_group(required=True)
    which.add_argument("--sampler", help="a named sampler (see list)")
    which.add_argument("--recipe", metavar="FILE.yaml", help="a design file (docs/recipes.md) or a shipped design")
    s.add_argument("--naive", action="store_true", help="with --recipe: the design's naive variant (its term dropped)")
    s.add_argument("--potential", required=True, help="a preset name or expr:<U(x) or U(x, y)>")
    s.add_argument("--box", type=_parse_box, default=None, metavar="LO,HI[,LO,HI]", help=BOX_HELP)
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a sampler parameter, once per parameter (they are listed below; 'list' gives each "
                        "sampler's and their defaults)")
    s.add_argument("--grad-noise", type=float, default=None, metavar="V", help="simulated gradient noise variance")
    s.add_argument("--batch", type=int, default=None, metavar="n", help="minibatch size (data posteriors)")
    s.add_argument("--estimator", default=None, choices=estimator_names(),
                   help="with --batch: the gradient estimator; minibatch (default), cv (control variates about the "
                        "mode: sgld-cv is sgld with it) or svrg")
    s.add_argument("--sampling", default="replace", choices=SAMPLING,
                   help="with --batch: draw each batch with replacement (default) or walk through the data in "
                        "epochs (without replacement)")
    s.add_argument("--steps", type=int, required=True, metavar="N",
                   help="steps after burn-in; every THIN-th of them is kept (N // THIN samples per chain)")
    s.add_argument("--burn", type=int, default=0, metavar="B",
                   help="steps before those, discarded: burn-in is extra, the run takes B + N steps (default 0)")
    s.add_argument("--thin", type=int, default=1, help="keep every THIN-th step of the N (default 1: all)")
    s.add_argument("--chains", type=int, default=100, help="independent chains run together (default 100)")
    s.add_argument("--seed", type=int, default=0,
                   help="the random seed: the same seed and arguments write the same file (default 0)")
    s.add_argument("--dtype", choices=DTYPES, default="float64",
                   help="the chains' precision: float32 keeps the state and draws normals in float32, faster for "
                        "large ensembles (default float64)")
    s.add_argument("--out", required=True, metavar="FILE.npz")
    d = sub.add_parser("diagnose", help="KL, TV, KS and ESS of a sample file against the exact density")
    d.add_argument("file")
    d.add_argument("--box", type=_parse_box, default=None, metavar="LO,HI[,LO,HI]",
                   help="score on this box instead of the one the file was sampled on; " + BOX_HELP)
    d.add_argument("--bins", type=_parse_bins, default=None, metavar="N[,M]",
                   help="histogram bins of KL and TV, per coordinate (default 100 in 1-d, 50,50 in 2-d)")
    d.add_argument("--run", choices=("a", "b"), default="a",
                   help="which run of a lab export comparing two (theta and meta, or theta_b and meta_b)")
    c = sub.add_parser("check", help="a design file's Gamma, SDE, update, D and Q verdicts and stationarity residual")
    c.add_argument("recipe", metavar="FILE.yaml", help="a design file (docs/recipes.md) or a shipped design's name")
    c.add_argument("--potential", required=True, help="a preset name or expr:<U(x) or U(x, y)>")
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a parameter of the design")
    c.add_argument("--naive", action="store_true", help="check the design's naive variant (its term dropped)")
    r = sub.add_parser("reproduce", help="rerun an experiment of the sources: figure (PNG, SVG), numbers (CSV)")
    r.add_argument("name", nargs="?", help="a reproduction name, or all")
    r.add_argument("--list", action="store_true", help="name the reproductions")
    r.add_argument("--out", default=None, metavar="DIR", help="where to write (default: assets/reproductions)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--full", action="store_true", help="the paper's sizes (slow)")
    return p


BOX_HELP = ("the box the target is drawn and scored on (histogram bins, KL, TV), lo,hi per coordinate: "
            "--box=-10,10,-8,8 (with '=', as it starts with '-'); default: a box fitted to where the mass is")


def _parse_box(text: str) -> tuple:
    try:
        return parse_box(text)
    except PotentialError as err:
        raise argparse.ArgumentTypeError(str(err).replace("a box is", "--box takes")) from None


def _parse_bins(text: str) -> tuple:
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) not in (1, 2) or not all(1 <= v <= 1000 for v in values):
        raise argparse.ArgumentTypeError(f"--bins takes one or two whole numbers from 1 to 1000, e.g. 30,40; "
                                         f"got '{text}'")
    return values


def _parse_sets(items) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set takes KEY=VALUE, got '{item}'")
        out[key.strip()] = value.strip()
    return out


def set_help() -> str:
    """`sample --help`'s list of sampler parameters, from their declarations (one line per declaration)."""
    lines = ["sampler parameters (--set KEY=VALUE; 'auto' where a parameter has one):"]
    for p, users in declarations().items():
        taking = {name for name, _ in users}
        others = [name for name in REGISTRY if name not in taking]
        which = ", ".join(n for n, _ in users) if len(others) > len(taking) else \
            "every sampler" + (f" but {', '.join(others)}" if others else "")
        lines.append(f"  {p.describe()} [{which}]")
    return "\n".join(lines)


def cmd_list(args, out):
    if args.params:
        print(parameters_markdown(), file=out, end="")
        return
    for name in sampler_names():
        spec = REGISTRY[name]
        params = ", ".join(f"{k}={v}" for k, v in spec.defaults.items())
        print(f"sampler    {name:14s} {spec.title}: {spec.source} [{params}]", file=out)
    for name, (base, estimator, title) in VARIANTS.items():
        print(f"sampler    {name:14s} {title}: {base} with --estimator {estimator} (needs --batch)", file=out)
    for name in preset_names():
        print(f"potential  {name:14s} {get_potential(name).description}", file=out)
    print("potential  expr:...       a typed U(x) or U(x, y), e.g. expr:x**4 - 2*x**2", file=out)
    for name in example_names():
        print(f"design     {name:14s} {load_design(name).description} (--recipe {name})", file=out)


MAX_SAMPLE_BYTES = 2 * 1024 ** 3     # theta larger than this (uncompressed) is refused before reading it
MAX_STEPS = 10 ** 9
MAX_META_BYTES = 100_000
MAX_SPEC = 200                        # characters of a potential spec read from a file


def cmd_sample(args, out):
    for key in ("steps", "chains", "thin"):
        if getattr(args, key) < 1:
            raise UsageError(f"--{key} must be >= 1")
    if args.burn < 0:
        raise UsageError("--burn must be >= 0")
    if args.steps + args.burn > MAX_STEPS:
        raise UsageError(f"--steps plus --burn may be at most {MAX_STEPS:,}")
    pot = get_potential(args.potential, box=args.box)
    sets = _parse_sets(args.set)
    auto = sets.get("eps") == "auto"
    if auto:
        del sets["eps"]
    if args.recipe is not None:
        design = load_design(args.recipe)
        sampler = design_sampler(design, pot, args.grad_noise, args.batch, args.naive, oracle=_oracle(pot, args),
                                 **sets)
        if "eps" not in sets and "eps" not in (design.marked.data.get("params") or {}):
            fit_eps(sampler)    # the file's own eps is its author's choice; the schema's default is not
    elif args.naive:
        raise UsageError("--naive goes with --recipe; a named sampler's naive form has its own name (see list)")
    else:
        sampler = build_sampler(args.sampler, pot, args.grad_noise, args.batch, estimator=args.estimator,
                                sampling=args.sampling, **sets)
    chosen = _auto_eps(sampler, args, sets, out) if auto else None
    if chosen is not None:
        sampler = chosen[0]
    # what is held at once: every kept theta, and the ensemble's whole state (momenta, memories) with its
    # temporaries (a few times over)
    size = np.dtype(args.dtype).itemsize
    kept_bytes = args.chains * (args.steps // args.thin) * pot.dim * size
    state_bytes = 4 * args.chains * sampler.n * size
    if kept_bytes > MAX_SAMPLE_BYTES:
        raise UsageError(f"the kept samples would take {kept_bytes / 1024 ** 3:.1f} GiB (at most "
                         f"{MAX_SAMPLE_BYTES // 1024 ** 3} GiB): raise --thin or lower --chains or --steps")
    if state_bytes > MAX_SAMPLE_BYTES:
        raise UsageError(f"{args.chains:,} chains of a {sampler.n}-variable state would take "
                         f"{state_bytes / 1024 ** 3:.1f} GiB: lower --chains")
    res = run(sampler, args.steps, args.chains, args.burn, args.thin, args.seed, dtype=args.dtype)
    meta = dict(res.meta, potential=args.potential, grad_noise=args.grad_noise, batch=args.batch)
    if args.estimator is not None or args.sampling != "replace" or args.sampler in VARIANTS:
        meta.update(sampler=args.sampler or meta["sampler"], estimator=args.estimator, sampling=args.sampling)
    if args.box is not None:
        meta.update(box=[list(b) for b in args.box])   # diagnose scores on the box the run was drawn on
    if args.recipe is not None:
        meta.update(recipe=args.recipe, naive=args.naive)
    if chosen is not None:
        meta["auto_eps"] = chosen[1]
    save_npz(args.out, theta=res.theta, meta=np.array(json.dumps(meta, sort_keys=True, default=_jsonable)))
    print(f"wrote {args.out}: theta {res.theta.shape}, {res.diverged} diverged chains, {res.escaped} escaped",
          file=out)
    if res.escaped:
        print(f"warning: {res.escaped} of {args.chains} kept chains reached an energy no draw of the target plausibly "
              f"has: they escaped it, or had not reached it by the end of --burn (a smaller step size, a corrected "
              f"sampler or a longer burn-in)", file=out)
    if args.naive and _gamma_is_zero(sampler.recipe):
        print("note: this design's Gamma is zero, so its naive variant is the same sampler", file=out)


def _oracle(pot, args):
    """The gradient oracle of a design run: --grad-noise, or --batch by --estimator and --sampling."""
    return make_oracle(pot, args.grad_noise, args.batch, args.estimator, args.sampling)


def _auto_eps(sampler, args, sets, out):
    """--set eps=auto: the ladder's largest step whose bias is under its noise (samplers.ladder.auto_eps), and
    the sampler at that step, with what the ladder measured for the file's meta."""
    from samplers.ladder import JOINT, auto_eps
    if sampler.spec.step_param != "eps" or sampler.potential.dim > 2 and not sampler.potential.known_marginals:
        raise UsageError("eps=auto runs the step-size ladder, which needs the exact law of theta_1: a target of one "
                         "or two dimensions, or a Gaussian")
    found = auto_eps(sampler, seed=args.seed)
    rungs = [dict(eps=p.eps, law=p.law, kl=p.kl, kl_noise=p.kl_noise, kl_tol=p.kl_tol, m2_error=p.m2_error,
                  m2_se=p.m2_se, diverged=p.diverged) for p in found.points]
    verdict = "under the noise" if found.passed else "the smallest tried; none was under the noise"
    law = "the joint law of (theta_1, theta_2)" if found.points[-1].law == JOINT else "theta_1's marginal"
    print(f"auto eps: {found.eps:.4g} ({verdict}; {len(rungs)} rungs of the step-size ladder, KL of {law})",
          file=out)
    params = {**sets, "eps": found.eps}
    if args.recipe is not None:
        s = design_sampler(load_design(args.recipe), sampler.potential, args.grad_noise, args.batch, args.naive,
                           oracle=_oracle(sampler.potential, args), **params)
    else:
        s = build_sampler(args.sampler, sampler.potential, args.grad_noise, args.batch, estimator=args.estimator,
                          sampling=args.sampling, **params)
    return s, dict(passed=found.passed, rungs=rungs)


def _gamma_is_zero(recipe) -> bool:
    """Gamma dropped where it is zero: D and Q constant (relativistic SGHMC's), the naive run is the same run."""
    g = recipe.Gamma
    return "gamma" in recipe.drop and g.const is not None and not g.const.any()


def cmd_check(args, out) -> int:
    report = check(load_design(args.recipe), get_potential(args.potential), args.naive, **_parse_sets(args.set))
    for line in report.lines():
        print(line, file=out)
    return 0 if report.ok else 1


def _jsonable(v):
    return v.item() if hasattr(v, "item") else str(v)


def save_npz(path, **arrays):
    """Like np.savez, but byte-for-byte reproducible: fixed timestamps in the zip entries."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            zf.writestr(info, buf.getvalue())


def plain(text, limit: int = 80) -> str:
    """File contents as the terminal shows them: printable characters only (no escape sequences), cut."""
    text = "".join(c for c in str(text) if c.isprintable())
    return text if len(text) <= limit else text[:limit] + "…"


# What reading an arbitrary file as a zip of .npy arrays can raise: a damaged deflate or LZMA stream, an unknown
# compression method, an encrypted member (RuntimeError), JSON nested too deeply (RecursionError), an npy header
# numpy cannot parse (its fallback parser of old headers raises tokenize's TokenError or a SyntaxError), ...
DAMAGED = (ValueError, zipfile.BadZipFile, OSError, EOFError, zlib.error, lzma.LZMAError, NotImplementedError,
           RuntimeError, tokenize.TokenError, SyntaxError)


def _npy_header(zf: zipfile.ZipFile, name: str):
    """Shape and dtype of an .npy member, read from its header alone (a zip bomb is never inflated)."""
    info = zf.getinfo(name)
    with zf.open(info) as f:
        version = np.lib.format.read_magic(f)
        read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in read:
            raise ValueError(f"npy format version {version}")
        shape, fortran, dtype = read[version](f, max_header_size=10_000)
    return info, tuple(shape), dtype


def read_samples(path, run: str = "a") -> tuple[np.ndarray, dict]:
    """theta and meta of a file written by `sample` or exported by the lab (run "b": theta_b and meta_b of a lab
    export comparing two), checked before anything large is read; UsageError (one line, in the file's terms) for
    anything else."""
    suffix = "" if run == "a" else "_" + run
    t_name, m_name = f"theta{suffix}.npy", f"meta{suffix}.npy"
    try:
        zf = zipfile.ZipFile(path)
    except DAMAGED as err:
        raise UsageError(f"{plain(path)} is not a samples file written by 'sample' ({plain(err)})") from None
    with zf:
        names = set(zf.namelist())
        if not {t_name, m_name} <= names:
            if suffix and {"theta.npy", "meta.npy"} <= names:
                raise UsageError(f"{plain(path)} holds one run: no theta{suffix} and meta{suffix} arrays")
            raise UsageError(f"{plain(path)} holds no theta and meta arrays: not written by 'sample' or the lab")
        try:
            info, shape, dtype = _npy_header(zf, t_name)
            minfo, mshape, mdtype = _npy_header(zf, m_name)
        except DAMAGED as err:
            raise UsageError(f"{plain(path)}: unreadable array header ({plain(err)})") from None
        if dtype.kind != "f" or dtype.fields is not None or len(shape) != 3:
            raise UsageError(f"theta must be a 3-d float array (kept, chains, dim), got {plain(dtype)} {shape}")
        if 0 in shape:          # before the potential is built and scored: the logistic's takes seconds
            raise UsageError(f"theta of shape {shape} holds no samples")
        nbytes = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
        if nbytes > MAX_SAMPLE_BYTES or info.file_size > MAX_SAMPLE_BYTES + 10_000:
            raise UsageError(f"theta of shape {shape} is larger than {MAX_SAMPLE_BYTES // 1024 ** 3} GiB")
        if mdtype.kind != "U" or mshape != () or minfo.file_size > MAX_META_BYTES:
            raise UsageError("meta must be one JSON string")
        try:
            with zf.open(t_name) as f:
                theta = np.lib.format.read_array(f, allow_pickle=False)
            with zf.open(m_name) as f:
                meta = json.loads(str(np.lib.format.read_array(f, allow_pickle=False)))
        except DAMAGED as err:
            raise UsageError(f"{plain(path)} is damaged ({plain(err)})") from None
    if not np.isfinite(theta).all():
        raise UsageError("theta holds NaN or infinite values: not written by 'sample' (it freezes diverged chains)")
    if not isinstance(meta, dict) or not isinstance(meta.get("potential"), str):
        raise UsageError("meta must be a JSON object naming its potential")
    if len(meta["potential"]) > MAX_SPEC:
        raise UsageError(f"the file's potential '{plain(meta['potential'], 40)}' is longer than {MAX_SPEC} characters")
    return theta, meta


def cmd_diagnose(args, out):
    theta, meta = read_samples(args.file, args.run)
    pot = get_potential(meta["potential"], box=args.box or _file_box(meta))
    beta = (meta.get("params") or {}).get("beta", 1.0) if isinstance(meta.get("params"), dict) else 1.0
    try:
        beta = float(beta)
    except (TypeError, ValueError):
        raise UsageError(f"the file's beta '{plain(beta, 40)}' is not a number") from None
    if not (np.isfinite(beta) and beta > 0):
        raise UsageError(f"the file's beta must be a number > 0, got {beta:g}")
    pot = pot.tempered(beta)   # the law the samples were drawn from: exp(-beta U)
    if theta.shape[2] != pot.dim:
        raise UsageError(f"theta has shape {theta.shape}, expected (kept, chains, {pot.dim})")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # finite but extreme samples (1e300) overflow in the statistics: nan on stdout, not warnings on stderr
        warnings.simplefilter("ignore", RuntimeWarning)
        if args.bins is not None and pot.dim > 2:
            raise UsageError("--bins sets the histogram of a target of one or two dimensions")
        res = score(pot, theta, _bins_for(args.bins, pot.dim))
        ess = dg.ess_per_dim(theta) if theta.shape[0] >= 4 else np.full(pot.dim, np.nan)
        smallest = np.nanmin(ess)
        escaped = _escaped_in_file(pot, theta, meta.get("diverged", 0))
    print(f"{plain(meta.get('sampler', '?'))} on {plain(meta['potential'])}: {theta.shape[0]} kept x "
          f"{theta.shape[1]} chains, {plain(meta.get('diverged', 0))} diverged{escaped}", file=out)
    for key in ("kl", "tv", "ks"):
        if key in res:
            print(f"{key.upper():4s} {res[key]:.5f}", file=out)
    if "outside" in res:
        print(f"OUT  {res['outside']:.5f} (share of samples outside the box {_box_text(pot)})", file=out)
    print(f"ESS  {smallest:.1f} (smallest over coordinates)", file=out)
    if pot.dim > 2 and len(pot.known_marginals) < pot.dim:
        _reference_scores(pot, theta, out)


def _reference_scores(pot, theta, out):
    """Beyond two parameters: per-marginal KS and Wasserstein against a long exact run, cached on disk."""
    from samplers.refsample import ReferenceError, reference_sample
    try:
        ref = reference_sample(pot)
    except ReferenceError as err:
        print(f"no per-marginal scores: {err}", file=out)
        return
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = marginal_distances(theta, effective_size(theta), ref.theta, ref.ess)
    print(f"reference: HMC with Metropolis, {ref.theta.shape[0]} kept x {ref.theta.shape[1]} chains, acceptance "
          f"{ref.acceptance:.2f}, ESS {np.min(ref.ess):.0f} (smallest){' at ' + ref.path if ref.path else ''}",
          file=out)
    print("per marginal: value ± sd bound (what an exact sampler of this ESS shows)", file=out)
    for i in range(pot.dim):
        print(f"  θ_{i + 1:<3d} KS {res['ks'][i]:.4f} ± {res['ks_err'][i]:.4f} ({res['ks_noise'][i]:.4f})   "
              f"W1 {res['w1'][i]:.4g} ± {res['w1_err'][i]:.2g} ({res['w1_noise'][i]:.2g})", file=out)


def _bins_for(bins, dim: int):
    """--bins as score takes it: one number, or a pair for a 2-d target (one number means that many per axis)."""
    if bins is None:
        return None
    if len(bins) != min(dim, 2) and not (len(bins) == 1 and dim == 2):
        raise UsageError(f"--bins takes {dim} number{'s' if dim > 1 else ''} for this {dim}-d target, got {len(bins)}")
    return bins[0] if len(bins) == 1 else bins


def _escaped_in_file(pot, theta, diverged) -> str:
    """", N escaped", counted again from the file's samples (a file from before the count has none recorded;
    nothing where it cannot be told, on a simplex). `sample` froze each diverged chain, so its last kept states
    are equal: such chains are counted as diverged, not here (an HMC chain may repeat a state by a rejection,
    so only when the file says some diverged). `pot` is the law sampled, already tempered."""
    frozen = np.zeros(theta.shape[1], bool)
    if theta.shape[0] > 1 and str(diverged) not in ("0", "None"):
        frozen = (theta[-1] == theta[-2]).all(axis=1)
    mask = escaped_chains(pot, theta, 1.0, ~frozen)
    return "" if mask is None else f", {int(mask.sum())} escaped"


def _box_text(pot) -> str:
    return " x ".join(f"[{lo:g}, {hi:g}]" for lo, hi in pot.box[:pot.dim])


def _file_box(meta: dict):
    """The box a samples file was drawn on (written by `sample --box`), checked as the file is untrusted."""
    box = meta.get("box")
    if box is None:
        return None
    if not (isinstance(box, list) and len(box) in (1, 2) and all(
            isinstance(b, list) and len(b) == 2 and all(isinstance(v, (int, float)) for v in b) for b in box)):
        raise UsageError(f"the file's box '{plain(box, 60)}' is not a list of [lo, hi] pairs")
    return box


def cmd_reproduce(args, out):
    from samplers.reproduce import REPRODUCTIONS, names, reproduce
    available = names()
    if not args.list and not args.name:
        raise UsageError("name a reproduction (or all); --list names them")
    if args.list:
        for name in available:
            print(f"{name:20s} {REPRODUCTIONS[name].title}", file=out)
        return
    todo = available if args.name == "all" else [args.name]
    for name in todo:
        if name not in REPRODUCTIONS:
            raise UsageError(f"unknown reproduction '{name}' (choose from {', '.join(available)}, or all)")
    started = time.time()
    for k, name in enumerate(todo, 1):
        t0 = time.time()
        if len(todo) > 1:
            print(f"\n== [{k}/{len(todo)}] {name} (started {time.strftime('%H:%M:%S')})", file=out, flush=True)
        reproduce(name, args.out, args.seed, args.full, stream=out)
        if len(todo) > 1:
            # wall-clock per reproduction: on a shared machine it says how long the run took, not how fast it is
            print(f"== [{k}/{len(todo)}] {name} done in {time.time() - t0:.0f} s "
                  f"({time.time() - started:.0f} s in all)", file=out, flush=True)


def main(argv=None, out=None) -> int:
    out = out or sys.stdout
    try:
        args = build_parser().parse_args(argv)
        commands = {"list": cmd_list, "sample": cmd_sample, "diagnose": cmd_diagnose, "check": cmd_check,
                    "reproduce": cmd_reproduce}
        return commands[args.command](args, out) or 0
    except (UsageError, *USER_ERRORS) as err:
        # messages may quote a file's contents or an argument: one line, no terminal escapes
        lines = str(err).splitlines()
        print(f"error: {plain(lines[0], 300) if lines else type(err).__name__}", file=sys.stderr)
        return 2
