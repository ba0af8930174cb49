"""The (H, D, Q) of sampler A: editable D and Q cells, Γ, the SDE and the update rule as math,
the naive switch and the stationarity-residual badge.

Cells are expressions in the state variables and U, parsed by the library's whitelist parser;
an invalid matrix (not symmetric PSD, not skew, unparsable) blocks the run with the library's
message, which names the cell.

Every cell edit goes straight into the configuration (even an invalid one: the lab then shows
why it is blocked), so the configuration always says what each cell holds. When the editor
shows a configuration changed elsewhere, it sets each cell and switch to what the configuration
already says, and an edit that changes nothing is ignored: no flag needed to tell the two apart.
"""
from __future__ import annotations

import html
import re
from functools import partial

import panel as pn
import param
from panel.viewable import Viewer

from samplers.engine.edit import cell_variables, matrix_cells

from ..model.i18n import DEFAULT_LANG, LANGS, N_, tr, tr_message
from ..model.lab import RESIDUAL_OK, Lab
from ..model.reasons import BlockKind

# an entry the library names as at fault (RecipeError.cells) is marked in red until fixed
BAD_CELL_CSS = ":host(.cell-bad) input { border: 2px solid #b00020; background: #fff0f0; }"
TERM_LABEL = {"gamma": N_("drop Γ (naive variant)"), "friction": N_("drop the friction D∇H (naive variant)")}


def times_before_numbers(latex: str) -> str:
    """2 D with D = 1.5 sqrt|U + 1.5| is printed 2\\,1.5..., which reads as 21.5: show 2 · 1.5."""
    return re.sub(r"\{2\\,(?=[\d.])", r"{2\\cdot ", latex).replace(r"(2\,", r"(2\cdot ")


def own_cells(recipe, which: str) -> list[list[str]]:
    """The registered D or Q as editable cells."""
    return matrix_cells(recipe._raw[0 if which == "D" else 1])


def column_widths(cells, least: int) -> list[int]:
    """Pixels per column so its longest formula shows whole (at most 420: longer ones scroll in the
    box and show whole in the tooltip)."""
    longest = [max(len(row[j]) for row in cells) for j in range(len(cells[0]))]
    return [min(420, max(least, 8 * n + 28)) for n in longest]


# a long constant (1.8054284742430116, a metric's auto C) shows rounded in its cell, and whole in the tooltip
LONG_NUMBER = re.compile(r"\d+\.\d{5,}(?:[eE][-+]?\d+)?")


def rounded(cell: str) -> str:
    """A cell's text with its long constants to 4 significant digits."""
    return LONG_NUMBER.sub(lambda m: f"{float(m.group()):.4g}", str(cell))


class CellInput(pn.widgets.TextInput):
    """A text input whose whole text is also its tooltip; `exact` (if set) is the tooltip instead: the cell's whole
    formula where the input shows it rounded."""

    exact = param.String(default="")
    label = param.String(default="", doc="the input's accessible name where it has no visible label")
    _rename = {**pn.widgets.TextInput._rename, "exact": None, "label": None}

    def _process_param_change(self, params):
        params = super()._process_param_change(params)
        if "value" in params:
            params["html_attributes"] = {"title": self.exact or params["value"] or ""} | (
                {"aria-label": self.label} if self.label else {})
        return params


def show_cell(widget, text: str, show=None) -> None:
    """Set a cell's input: shown through `show` (rounded), the whole text in its tooltip."""
    text = str(text)
    shown = show(text) if show is not None else text
    widget.param.update(exact=text if shown != text else "", value=shown)


def residual_badge(value, lang: str = DEFAULT_LANG) -> str:
    """Green when exp(-H) is stationary under the dynamics, red when it is not."""
    if value is None:
        return ""
    ok = value < RESIDUAL_OK
    color, word = (("#1b5e20", N_("stationary: a recipe")) if ok else
                   ("#b00020", N_("not stationary: exp(−H) is not invariant")))
    tip = html.escape(tr("relative Fokker–Planck residual at exp(−H)", lang), quote=True)
    return (f"<span class='residual-badge {'ok' if ok else 'bad'}' title='{tip}' "
            f"style='display:inline-block;padding:2px 8px;border-radius:10px;color:white;background:{color};"
            f"font-size:12px'>{tr('FP residual {value} — {word}', lang, value=f'{value:.1e}', word=tr(word, lang))}"
            "</span>")


def matrix_grid(which, cells, names, on_cell, prefix: str = "cell", show=None, lang: str = DEFAULT_LANG):
    """D or Q as a grid of cell inputs, headed by the state's names: (its layout, its inputs by row);
    on_cell(which, i, j, text) hears each edit. Each input has the class f"{prefix}-{which}-{i}-{j}"; `show` (e.g.
    `rounded`) is how a cell's text is shown, its whole text then in the tooltip."""
    n = len(names)
    widths = column_widths(cells, {1: 160, 2: 100, 3: 90, 4: 80}.get(n, 72))
    widgets = []
    header = [pn.pane.HTML("", width=44, margin=(0, 2))] + [
        pn.pane.HTML(f"<div style='text-align:center;font-size:12px'>{html.escape(v)}</div>",
                     width=w, margin=(0, 2))
        for v, w in zip(names, widths)]
    rows = [pn.Row(*header, margin=0)]
    for i in range(n):
        row_w = []
        for j in range(n):
            text = str(cells[i][j])
            shown = show(text) if show is not None else text
            w = CellInput(value=shown, exact=text if shown != text else "", width=widths[j], margin=(1, 2),
                          css_classes=[f"{prefix}-{which}-{i}-{j}", "recipe-cell"], stylesheets=[BAD_CELL_CSS],
                          label=tr("{which} row {row}, column {column}", lang, which=which, row=names[i],
                                   column=names[j]))
            pn.bind(partial(on_cell, which, i, j), w, watch=True)
            row_w.append(w)
        widgets.append(row_w)
        name = pn.pane.HTML(f"<div style='font-size:12px;padding-top:6px'>{html.escape(names[i])}</div>",
                            width=44, margin=(0, 2))
        rows.append(pn.Row(name, *row_w, margin=0))
    label = tr("D (symmetric, positive semidefinite)" if which == "D" else "Q (skew-symmetric)", lang)
    # wide matrices scroll inside their box instead of widening the page on a phone
    grid = pn.Column(pn.pane.HTML(f"<b>{label}</b>", margin=(4, 4)), *rows, margin=(0, 10),
                     sizing_mode="stretch_width", styles={"overflow-x": "auto", "min-width": "0",
                                                          "max-width": "100%"})
    # basis = the cells' own width, so Q goes under D when the two do not fit side by side
    natural = 44 + sum(w + 4 for w in widths) + 24
    return pn.Column(grid, sizing_mode="stretch_width", styles={"flex": f"1 1 {natural}px", "min-width": "0"}), widgets


class MathPanes:
    """H, Γ, the SDE and the update rule of a recipe, as math with their headings."""

    def __init__(self, lang: str = DEFAULT_LANG):
        self.lang = lang
        self.panes = {k: pn.pane.LaTeX("", renderer="katex", sizing_mode="stretch_width",
                                       styles={"overflow-x": "auto", "font-size": "0.95em"}, margin=(0, 10))
                      for k in ("H", "Gamma", "sde", "update")}

    def __getitem__(self, key):
        return self.panes[key]

    def layout(self) -> list:
        lang = self.lang
        return [self.panes["H"],
                pn.pane.HTML(f"<b>{tr('Γ, recomputed from D and Q', lang)}</b>", margin=(4, 10)), self.panes["Gamma"],
                pn.pane.HTML(f"<b>{tr('The SDE', lang)}</b>", margin=(4, 10)), self.panes["sde"],
                pn.pane.HTML(f"<b>{tr('The update rule (Eq. 9)', lang)}</b>", margin=(4, 10)), self.panes["update"]]

    def show(self, recipe) -> None:
        m = recipe.matrices_latex()
        self.panes["H"].object = times_before_numbers(f"$z = {m['z']}^\\top,\\quad H(z) = {m['H']}$")
        self.panes["Gamma"].object = times_before_numbers(f"$\\Gamma(z) = {m['Gamma']}^\\top$")
        self.panes["sde"].object = times_before_numbers("$" + recipe.latex_sde() + "$")
        self.panes["update"].object = times_before_numbers("$" + recipe.latex_update() + "$")

    def clear(self) -> None:
        for pane in self.panes.values():
            pane.object = ""


class RecipeEditor(Viewer):
    lang = param.Selector(objects=list(LANGS), default=DEFAULT_LANG)

    def __init__(self, lab: Lab, **params):
        super().__init__(**params)
        self.lab, self.cfg = lab, lab.config
        self.naive = pn.widgets.Switch(name=tr("naive", self.lang), css_classes=["naive-switch"], margin=(8, 10))
        self.naive_label = pn.pane.HTML("", margin=(8, 0))
        self.badge = pn.pane.HTML("", css_classes=["residual"], margin=(4, 10))
        self.error = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["recipe-error"], margin=(0, 10))
        self.note = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        self.revert = pn.widgets.Button(name=tr("Revert D and Q", self.lang), button_type="light", width=140,
                                        css_classes=["revert-button"])
        self.revert.on_click(lambda e: self.cfg.param.update(D=None, Q=None, naive=None))
        self.D_grid = pn.GridBox(ncols=1)
        self.Q_grid = pn.GridBox(ncols=1)
        self.math = MathPanes(self.lang)
        self.cells = {"D": [], "Q": []}
        self._shape_key = None
        pn.bind(self._on_naive, self.naive, watch=True)
        lab.param.watch(self._render, ["version", "blocks"])
        self.body = pn.Column(sizing_mode="stretch_width")
        self._render()
        self.param.watch(self._on_lang, "lang")

    def _on_lang(self, *_) -> None:
        """The editor built again in the language (the cells hold what the configuration says)."""
        self.revert.name = tr("Revert D and Q", self.lang)
        self.naive.name = tr("naive", self.lang)
        self.math.lang = self.lang
        self._shape_key = None
        self._render()

    # -- building ---------------------------------------------------------------------
    def _make_grid(self, which, cells, names):
        grid, self.cells[which] = matrix_grid(which, cells, names, self._on_cell, show=rounded, lang=self.lang)
        return grid

    def _current_cells(self, side, which):
        """The cells the configuration says (its own edit, else the registered matrix)."""
        own = getattr(self.cfg, which)
        if own is not None and len(own) == side.base_recipe.n:
            return own
        return own_cells(side.base_recipe, which)

    def _side(self):
        """Sampler A's side when it has an editable recipe, else None."""
        side = self.lab.sides[0] if self.lab.sides else None
        designed = side is not None and side.sampler.spec.family == "design"    # the design editor's
        return side if side is not None and side.base_recipe is not None and not designed else None

    def _render(self, *_):
        lab = self.lab
        side = self._side()
        block = lab.blocks.get("config")
        recipe_block = block if block is not None and block.kind is BlockKind.RECIPE else None
        if side is None:
            if not lab.sides:
                reason = N_("no sampler is built yet (see the message above the plots)")
            elif lab.sides[0].sampler.spec.family == "design":
                reason = N_("sampler A is the design: it is edited in the design editor")
            elif lab.sides[0].sampler.spec.recipe is None:
                reason = N_("this sampler is not a recipe sampler")
            elif lab.sides[0].recipe is not None:
                reason = N_("this sampler's D and Q are functions of its state (QNHMC's L-BFGS operator), not formulas")
            else:
                reason = N_("D and Q can be edited for targets of dimension 1 and 2")
            text = tr("{reason}: no D/Q editor.", self.lang, reason=tr(reason, self.lang))
            self.body.objects = [pn.pane.HTML(f"<i>{text}</i>", margin=(0, 10))]
            self._shape_key = None
            return
        base = side.base_recipe
        names = [str(v) for v in base.sym.z]
        key = (side.sampler.name, tuple(names), lab.potential.name if lab.potential else "")
        self.naive.value = self._naive_shown(side)
        if key != self._shape_key or not self.body.objects:
            # a new state layout: new cells (otherwise cells stay, so typing is never interrupted)
            self._shape_key = key
            self.naive_label.object = f"<span style='font-size:13px'>{tr(TERM_LABEL[side.term], self.lang)}</span>"
            variables = ", ".join(cell_variables(base))
            self.note.object = ("<div style='font-size:12px;color:#444'>" + html.escape(tr(
                "z = ({names}); cells are expressions in {variables} (U is the potential's value). Press Enter or "
                "leave a cell to apply.", self.lang, names=", ".join(names), variables=variables)) + "</div>")
            D = self._make_grid("D", self._current_cells(side, "D"), names)
            Q = self._make_grid("Q", self._current_cells(side, "Q"), names)
            self.body.objects = [
                pn.Row(self.naive, self.naive_label, self.revert),
                self.badge, self.error, self.note,
                pn.FlexBox(D, Q, flex_wrap="wrap", sizing_mode="stretch_width"),
                *self.math.layout(),
            ]
        else:
            for which in ("D", "Q"):
                for row_w, row in zip(self.cells[which], self._current_cells(side, which)):
                    for w, text in zip(row_w, row):
                        show_cell(w, text, rounded)
        bad = set(recipe_block.cells) if recipe_block else set()
        for which in ("D", "Q"):
            for i, row_w in enumerate(self.cells[which]):
                for j, w in enumerate(row_w):
                    marked = "cell-bad" in w.css_classes
                    if marked != ((which, i, j) in bad):
                        w.css_classes = [c for c in w.css_classes if c != "cell-bad"] + (["cell-bad"] if not marked
                                                                                         else [])
        self.math.show(side.recipe)
        # while D/Q are invalid the last valid recipe's badge would mislead: hide it
        self.badge.object = "" if recipe_block else residual_badge(side.residual, self.lang)
        why = html.escape(tr_message(recipe_block.message, self.lang)) if recipe_block else ""
        self.error.object = f"<div style='color:#b00020;font-weight:600'>{why}</div>" if recipe_block else ""

    # -- edits ------------------------------------------------------------------------
    def _on_cell(self, which, i, j, text):
        side = self._side()
        if side is None:
            return
        cells = {w: [list(row) for row in self._current_cells(side, w)] for w in ("D", "Q")}
        if text in (cells[which][i][j], rounded(cells[which][i][j])):      # what the configuration already says
            return
        cells[which][i][j] = text
        own_D, own_Q = own_cells(side.base_recipe, "D"), own_cells(side.base_recipe, "Q")
        self.cfg.param.update(D=None if cells["D"] == own_D else cells["D"],
                              Q=None if cells["Q"] == own_Q else cells["Q"])

    def _naive_shown(self, side) -> bool:
        """What the configuration says of the naive switch (None: as registered)."""
        return bool(side.base_recipe.drop) if self.cfg.naive is None else self.cfg.naive

    def _on_naive(self, value):
        side = self._side()
        if side is None or value == self._naive_shown(side):   # what the configuration already says
            return
        self.cfg.naive = None if value == bool(side.base_recipe.drop) else value

    def __panel__(self):
        return self.body
