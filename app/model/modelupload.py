"""A user's model file and its CSV uploaded to the lab (docs/models.md): read, derived and normalised first in the
runner's sandbox (a forked process killed at its limit, so a file that sympy or the grid would chew on for long
holds nothing), then built here once the sandbox has shown that it builds in time, and kept under its content's
digest so the lab's target list and links within this server find it (`load_uploaded`).

The views hand `read_model_upload` the uploaded files as {name: bytes}, on the session runner, off the event loop.
"""
from __future__ import annotations

import hashlib

from samplers.cache import BoundedCache
from samplers.errors import InputError
from samplers.targets.modelfile import ModelFileError, read_model_text
from samplers.targets.potential import Potential

from .runner import LIMIT_S, Sandbox

PREFIX = "model:upload:"
MAX_YAML_BYTES = 16_000
MAX_CSV_BYTES = 1 << 20       # 1 MiB: the exact law is normalised on a 501 x 501 grid, every point over every row
MAX_ROWS = 2_000
UPLOAD_MEMORY = 512 << 20     # what building an uploaded model may add, in its sandbox
_UPLOADED = BoundedCache(32)


def _texts(files: dict) -> tuple[str, str, dict]:
    """(YAML name, YAML text, {CSV name: text}) from the uploaded files, their sizes checked before decoding."""
    yamls = [n for n in files if str(n).lower().endswith((".yaml", ".yml"))]
    if len(yamls) != 1:
        raise ModelFileError(f"upload one model file (.yaml) and its CSV; got {len(yamls)} model files")
    csvs = {}
    for name, data in files.items():
        limit = MAX_YAML_BYTES if name in yamls else MAX_CSV_BYTES
        if len(data) > limit:
            raise ModelFileError(f"{len(data):,} bytes (at most {limit:,} in the lab)", source=str(name)[:80])
        if name not in yamls:
            csvs[str(name)] = data.decode("utf-8", errors="replace")
    return yamls[0], files[yamls[0]].decode("utf-8", errors="replace"), csvs


def _build(yaml_name: str, text: str, csvs: dict, spec: str) -> Potential:
    def read_csv(path):
        name = path.replace("\\", "/").rsplit("/", 1)[-1]
        if name not in csvs:
            raise ModelFileError(f"was not uploaded (upload it with the model file; uploaded: "
                                 f"{', '.join(sorted(csvs)) or 'none'})")
        if csvs[name].count("\n") > MAX_ROWS + 1:
            raise ModelFileError(f"more than {MAX_ROWS:,} rows (in the lab; the command line takes more)")
        return csvs[name]
    model, extra = read_model_text(text, yaml_name[:80], read_csv)
    extra.setdefault("description", f"the uploaded model {yaml_name[:80]}")
    return model.potential(spec, formula=model.formula(), **extra)


def _checked(send, *args):
    try:
        pot = _build(*args)
        send(("ok", pot.dim))
    except ModelFileError as err:
        send(("refused", str(err)))
    except InputError as err:      # its posterior refused (not proper, not finite): its own words, no class name
        send(("refused", f"{args[0][:80]}: the model cannot be used: {str(err)[:300]}"))
    except Exception as err:       # noqa: BLE001 - in the sandbox: anything a file causes is the file's to hear
        send(("refused", f"{args[0][:80]}: the model cannot be used ({type(err).__name__}: {str(err)[:200]})"))


def read_model_upload(files: dict, limit_s: float | None = None) -> str:
    """The potential spec of an uploaded model file and its CSV ({name: bytes}), built and kept for
    `load_uploaded`; ModelFileError (one line naming the file, line, column and field) if it cannot be used."""
    yaml_name, text, csvs = _texts(files)
    digest = hashlib.sha256(repr((text, sorted(csvs.items()))).encode()).hexdigest()[:16]
    spec = f"{PREFIX}{digest}"
    if spec in _UPLOADED:
        return spec
    limit_s = LIMIT_S["model upload"] if limit_s is None else limit_s
    kind, value = Sandbox(_checked, yaml_name, text, csvs, spec, memory=UPLOAD_MEMORY).first(limit_s)
    if kind == "refused":
        raise ModelFileError(value)
    if kind != "ok":
        raise ModelFileError(f"{yaml_name[:80]}: the model took longer than {limit_s:g} s to build in the lab"
                             if kind == "time" else
                             f"{yaml_name[:80]}: the model needs more than {UPLOAD_MEMORY >> 20} MB to build")
    _UPLOADED.put(spec, _build(yaml_name, text, csvs, spec))     # shown to build within the limit
    return spec


def load_uploaded(spec: str) -> Potential | None:
    return _UPLOADED.get(spec)
