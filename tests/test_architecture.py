"""The layout is checked, not hoped for: no import cycles (imports inside functions count), the
model layer of the app free of Panel and Bokeh, and a plain `pip install .` that works outside the
repository. The layer contracts themselves are import-linter's (pyproject.toml, run by .ci/run)."""
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("samplers", "app", "lessons")


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_cycles():
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    pkg = tmp_path / "cyclic_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text("from . import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles(grimp.build_graph("cyclic_pkg", cache_dir=None)) == [["cyclic_pkg.a", "cyclic_pkg.b"]]


def test_the_architecture_page_names_every_module_and_only_modules_that_exist():
    """docs/architecture.md names each module by its path inside its package, in backticks."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`([\w/]+\.py)`", doc))
    modules = [path.relative_to(ROOT).as_posix() for package in PACKAGES for path in (ROOT / package).rglob("*.py")]
    missing = sorted(m for m in modules
                     if not m.endswith("__init__.py") and m.split("/", 1)[1] not in named)
    # a short name in a row's text (`recipe.py` beside `engine/recipe.py`) counts when some module ends so
    gone = sorted(name for name in named
                  if not (ROOT / name).exists() and not any(m.endswith("/" + name) for m in modules))
    assert not missing, f"modules docs/architecture.md does not name: {missing}"
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"


def test_app_model_imports_no_panel_or_bokeh():
    code = ("import sys, app.model; bad = sorted({m.split('.')[0] for m in sys.modules} & {'panel', 'bokeh'}); "
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.skipif(os.environ.get("SKIP_INSTALL_TEST") == "1", reason="SKIP_INSTALL_TEST=1")
def test_plain_install_works_outside_the_repository(tmp_path):
    """pip install . (not editable) into a venv that borrows the installed dependencies, then, from
    another directory: the three packages import from site-packages, the shipped design files are installed, and
    a lesson check runs."""
    source = tmp_path / "source"   # pip builds in the tree it is given: keep the checkout clean
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__",
                                                                  "test-artifacts", ".pytest_cache"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    py = str(env_dir / "bin" / "python")
    pip = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps",
                          "--disable-pip-version-check", str(source)], capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = ("import samplers, app, lessons, app.model\n"
            "for m in (samplers, app, lessons):\n"
            "    assert 'site-packages' in m.__file__, m.__file__\n"
            "pages = lessons.load_lessons()\n"
            "assert len(pages) >= 11, len(pages)\n"
            "from samplers.design import example_names, load_design\n"
            "assert len(example_names()) >= 5, example_names()\n"
            "assert load_design('sgnht').n == 3\n"
            "print(lessons.run_check('fokker_planck_residual', quick=True)['passed'])\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([py, "-c", code], capture_output=True, text=True, cwd=elsewhere, env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith("True")
