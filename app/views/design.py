"""The design editor: the recipe card's mode for the designed sampler (`DESIGN` as sampler A or B).

Choose a preset (a shipped design, or the empty one), add, remove and rename auxiliary variables, type K, D and
Q cell by cell and the parameters; Γ, the SDE and the update show as math once the lab has built the design
(off the event loop, within its time limit), with the residual badge. The design travels in the link, and
downloads and uploads as YAML. Every edit goes straight into the configuration, as the D/Q editor's do: the lab
then shows why an invalid design is blocked, naming the cell, and the editor marks it.

Everything a user typed is shown as plain text (escaped), never as HTML or Markdown.
"""
from __future__ import annotations

import html
import io
from functools import partial

import panel as pn
import param
from panel.viewable import Viewer

from samplers.design import DesignError, example_names

from ..model.design import (
    DESIGN,
    EMPTY,
    MAX_STATE,
    add_aux,
    current,
    dim_of,
    from_yaml,
    key_of,
    params_text,
    preset,
    read_upload,
    remove_aux,
    rename_aux,
    set_cell,
    set_kinetic,
    set_params,
    state_names,
    to_yaml,
)
from ..model.i18n import DEFAULT_LANG, LANGS, N_, tr, tr_message
from ..model.lab import Lab
from ..model.reasons import BlockKind
from ..model.runner import Failure
from .controls import error_html
from .recipe_editor import BAD_CELL_CSS, CellInput, MathPanes, matrix_grid, residual_badge

# a preset or an upload for another dimension of θ brings a target of that dimension along
TARGET_OF_DIM = {1: "double-well", 2: "banana"}
PRESET_PROMPT = N_("choose a preset…")
WIDE_CSS = ":host input { font-family: monospace; }"


def design_side(lab: Lab):
    """The side that runs the design, if one does and it is built."""
    return next((s for s in lab.sides if s.sampler.spec.family == "design"), None)


class DesignEditor(Viewer):
    lang = param.Selector(objects=list(LANGS), default=DEFAULT_LANG)

    def __init__(self, lab: Lab, **params):
        super().__init__(**params)
        self.lab, self.cfg = lab, lab.config
        self.preset = pn.widgets.Select(options=self._presets(), value="", width=280, css_classes=["design-preset"])
        self.preset.param.watch(self._on_preset, "value")
        self.new_aux = pn.widgets.TextInput(width=160, css_classes=["aux-new"])
        self.add = pn.widgets.Button(button_type="primary", width=120, margin=(24, 5, 5, 5), css_classes=["aux-add"])
        self.add.on_click(self._on_add)
        self.aux_rows = pn.FlexBox(flex_wrap="wrap", sizing_mode="stretch_width")
        self.aux_error = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["aux-error"], margin=(0, 10))
        self.kinetic = CellInput(sizing_mode="stretch_width",
                                 css_classes=["design-kinetic"], stylesheets=[BAD_CELL_CSS, WIDE_CSS],
                                 max_width=640)
        pn.bind(self._on_kinetic, self.kinetic, watch=True)
        self.params = pn.widgets.TextInput(sizing_mode="stretch_width", max_width=640, css_classes=["design-params"],
                                           stylesheets=[WIDE_CSS])
        pn.bind(self._on_params, self.params, watch=True)
        self.params_error = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["params-error"],
                                         margin=(0, 10))
        self.badge = pn.pane.HTML("", css_classes=["residual", "design-residual"], margin=(4, 10))
        self.error = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["recipe-error", "design-error"],
                                  margin=(0, 10))
        self.note = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        self.extra = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10), css_classes=["design-extra"])
        self.math = MathPanes(self.lang)
        self.download = pn.widgets.FileDownload(callback=self._yaml, filename="design.yaml",
                                                button_type="light", width=150, css_classes=["design-download"])
        self.upload = pn.widgets.FileInput(accept=".yaml,.yml", width=230, css_classes=["design-upload"])
        self.upload.param.watch(self._on_upload, "value")
        self.upload_status = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["upload-status"],
                                          margin=(0, 10))
        self.matrices = pn.FlexBox(flex_wrap="wrap", sizing_mode="stretch_width")
        self.cells: dict = {"D": [], "Q": []}
        self.aux_inputs: list = []
        self._shape = None
        lab.param.watch(self._render, ["version", "blocks"])
        self.cfg.param.watch(self._render, ["design"])
        self.upload_label = pn.pane.HTML("", margin=(0, 5))
        self.state_heading = pn.pane.HTML("", margin=(4, 10))
        self.body = pn.Column(sizing_mode="stretch_width", css_classes=["design-editor"])
        self._words()
        self.param.watch(self._words, "lang")

    def _presets(self) -> dict:
        options = {tr(PRESET_PROMPT, self.lang): "", tr("empty design (θ alone, nothing moves)", self.lang): EMPTY}
        options.update({name: name for name in example_names()})
        return options

    def _words(self, *_) -> None:
        """The editor's texts in the language; its cells are built again (they hold what the design says)."""
        lang = self.lang
        self.preset.param.update(name=tr("Start from", lang), options=self._presets())
        self.new_aux.param.update(name=tr("New auxiliary variable", lang), placeholder=tr("e.g. r", lang))
        self.add.name = tr("Add variable", lang)
        self.kinetic.name = self.kinetic.label = tr("K, the kinetic part of H = U(θ) + K", lang)
        self.params.name = tr("Step size and constants (name = value, …)", lang)
        self.download.label = tr("Download YAML", lang)
        self.upload_label.object = f"<span style='font-size:12px'>{tr('Upload a YAML design', lang)}</span>"
        self.state_heading.object = (f"<b>{tr('State', lang)}</b> <span style='font-size:12px;color:#444'>"
                                     f"{tr('θ is the target’s; the auxiliary variables follow it in z', lang)}</span>")
        self.math.lang = lang
        self.body.objects = [
            pn.FlexBox(self.preset, pn.Column(self.download, margin=(18, 0, 0, 0)),
                       pn.Column(self.upload_label, self.upload),
                       flex_wrap="wrap", sizing_mode="stretch_width"),
            self.upload_status, self.badge, self.error,
            self.state_heading,
            self.aux_rows, pn.FlexBox(self.new_aux, self.add, flex_wrap="wrap", sizing_mode="stretch_width"),
            self.aux_error,
            self.kinetic, self.params, self.params_error, self.note, self.matrices, self.extra,
            *self.math.layout()]
        self._shape = None
        self._render()

    # -- what is shown --------------------------------------------------------------------
    @property
    def data(self) -> dict:
        dim = self.lab.potential.dim if self.lab.potential is not None else 1
        return current(self.cfg.design, dim)

    def _render(self, *_):
        data = self.data
        if len(data["D"]) > MAX_STATE:      # the empty design on a 10-D target: no grid of a hundred cells
            self._shape = None
            self.matrices.objects, self.aux_rows.objects, self.cells, self.aux_inputs = [], [], {"D": [], "Q": []}, []
            self.note.object = "<i>" + tr("A design's state has at most {n} variables: choose a target of dimension 1 "
                                          "or 2, or a preset.", self.lang, n=MAX_STATE) + "</i>"
            self.badge.object = self.error.object = ""
            self.math.clear()
            return
        names = state_names(data)
        if (tuple(names), len(data["D"])) != self._shape:
            self._shape = (tuple(names), len(data["D"]))
            self._make_aux(data)
            self.matrices.objects = [self._grid(which, data[which], names) for which in ("D", "Q")]
            variables = ", ".join(names + ["U"] + [k for k in data.get("params", {}) if k not in ("eps", "Bhat")])
            self.note.object = ("<div style='font-size:12px;color:#444'>" + html.escape(tr(
                "z = ({names}); cells are expressions in {variables} (U is the potential's value). Press Enter or "
                "leave a cell to apply.", self.lang, names=", ".join(names), variables=variables)) + "</div>")
        else:
            for which in ("D", "Q"):
                for row_w, row in zip(self.cells[which], data[which]):
                    for w, text in zip(row_w, row):
                        w.value = str(text)
            for w, name in zip(self.aux_inputs, data["aux"]):
                w.value = name
        self.kinetic.value = str(data.get("kinetic", "0"))
        self.params.value = params_text(data)
        self.extra.object = self._extra(data, names, self.lang)
        block = self.lab.blocks.get("config")
        bad = set(block.cells) if block is not None and block.kind is BlockKind.RECIPE else set()
        for which in ("D", "Q"):
            for i, row_w in enumerate(self.cells[which]):
                for j, w in enumerate(row_w):
                    self._mark(w, (which, i, j) in bad)
        self._mark(self.kinetic, ("kinetic",) in bad)
        side = design_side(self.lab)
        blocked = bool(bad) or (block is not None and block.kind is BlockKind.RECIPE)
        why = html.escape(tr_message(block.message, self.lang)) if blocked else ""
        self.error.object = f"<div style='color:#b00020;font-weight:600'>{why}</div>" if blocked else ""
        # the side on screen may be an earlier design's while this one builds (or was refused): not its verdict
        fresh = side is not None and side.key is not None and side.key[2] == key_of(data)
        if not fresh or blocked:
            self.badge.object = ("" if blocked else "<i style='font-size:13px'>" + tr(
                "building the design…" if self.lab.building else "not built: see the message above the plots",
                self.lang) + "</i>")
            self.math.clear()
            return
        self.badge.object = residual_badge(side.residual, self.lang)
        self.math.show(side.recipe)

    @staticmethod
    def _mark(w, bad: bool) -> None:
        if ("cell-bad" in w.css_classes) != bad:
            w.css_classes = [c for c in w.css_classes if c != "cell-bad"] + (["cell-bad"] if bad else [])

    @staticmethod
    def _extra(data, names, lang: str = DEFAULT_LANG) -> str:
        parts = []
        if data.get("blocks"):
            order = " → ".join("{" + ", ".join(b) + "}" for b in data["blocks"])
            parts.append(tr("update order: {order}", lang, order=order))
        if data.get("drop"):
            parts.append(tr("drops: {terms} (a naive design)", lang, terms=", ".join(data["drop"])))
        if data.get("naive"):
            parts.append(tr("naive variant drops: {terms}", lang, terms=data["naive"]))
        if data.get("box"):
            parts.append(tr("box: {ranges}", lang, ranges=", ".join(tr("{k} in [{lo}, {hi}]", lang, k=k, lo=lo, hi=hi)
                                                                      for k, (lo, hi) in data["box"].items())))
        if data.get("description"):
            parts.append(tr_message(str(data["description"]), lang))
        return ("<div style='font-size:12px;color:#444'>" + html.escape("; ".join(parts)) + "</div>") if parts else ""

    def _make_aux(self, data):
        self.aux_inputs, rows = [], []
        for k, name in enumerate(data["aux"]):
            w = pn.widgets.TextInput(value=name, width=110, css_classes=[f"aux-name-{k}"])
            pn.bind(partial(self._on_rename, k), w, watch=True)
            remove = pn.widgets.Button(name="✕", width=36, button_type="light", css_classes=[f"aux-remove-{k}"],
                                       description=tr("remove {name}", self.lang, name=name))
            remove.on_click(partial(self._on_remove, k))
            self.aux_inputs.append(w)
            rows.append(pn.Row(w, remove, margin=0))
        if not rows:
            rows = [pn.pane.HTML(f"<i style='font-size:12px'>{tr('no auxiliary variable: z = θ', self.lang)}</i>",
                                 margin=(4, 10))]
        self.aux_rows.objects = rows

    def _grid(self, which, cells, names):
        grid, self.cells[which] = matrix_grid(which, cells, names, self._on_cell, prefix="design-cell",
                                              lang=self.lang)
        return grid

    # -- edits ------------------------------------------------------------------------------
    def _apply(self, data, **upd) -> None:
        if data != self.cfg.design or upd:
            self.cfg.param.update(design=data, **upd)

    def _on_cell(self, which, i, j, text):
        data = self.data
        if str(data[which][i][j]) != text:
            self._apply(set_cell(data, which, i, j, text))

    def _on_kinetic(self, text):
        data = self.data
        if str(data.get("kinetic", "0")) != text:
            self._apply(set_kinetic(data, text))

    def _on_params(self, text):
        data = self.data
        if params_text(data) == text:
            return
        try:
            new = set_params(data, text)
        except DesignError as err:
            self.params_error.object = error_html(tr("{reason} (not applied)", self.lang,
                                                     reason=tr_message(str(err), self.lang)))
            return
        self.params_error.object = ""
        self._apply(new)

    def _edit_aux(self, edit) -> None:
        try:
            new = edit(self.data)
        except DesignError as err:
            self.aux_error.object = error_html(tr_message(str(err), self.lang))
            return False
        self.aux_error.object = ""
        self._apply(new)
        return True

    def _on_add(self, _event):
        if self._edit_aux(lambda d: add_aux(d, self.new_aux.value_input or self.new_aux.value or "")):
            self.new_aux.value = self.new_aux.value_input = ""

    def _on_remove(self, k, _event):
        self._edit_aux(lambda d: remove_aux(d, k))

    def _on_rename(self, k, name):
        if k < len(self.data["aux"]) and self.data["aux"][k] != name:
            self._edit_aux(lambda d: rename_aux(d, k, name))

    def _with_target(self, data) -> dict:
        """The potential to go with a design for another dimension of θ (none when the current one fits)."""
        pot = self.lab.potential
        dim = dim_of(data)
        return {} if pot is not None and pot.dim == dim else {"potential": TARGET_OF_DIM.get(dim, "banana")}

    def _on_preset(self, event):
        if not event.new:
            return
        dim = self.lab.potential.dim if self.lab.potential is not None and self.lab.potential.dim <= 2 else 1
        data = preset(event.new, dim)
        self.upload_status.object = ""
        self._apply(data, **self._with_target(data))
        self.preset.value = ""        # the same preset can be chosen again to start over

    def _on_upload(self, event):
        if not event.new:
            return
        text, name = event.new.decode("utf-8", errors="replace"), self.upload.filename or "the file"
        runner = self.lab.runner
        if runner.inline:
            read = partial(from_yaml, text)
        else:
            self.upload_status.object = tr("reading the file…", self.lang)
            read = partial(read_upload, text)

        def done(out):
            if isinstance(out, Failure):
                self.upload_status.object = error_html(f"{name}: {tr_message(out.message, self.lang)}")
                return
            self.upload_status.object = ""
            self._apply(out, **self._with_target(out))
        runner.run(read, done, tag="design upload", pool="wait")

    def _yaml(self):
        data = self.data
        self.download.filename = f"{data.get('name', DESIGN)}.yaml"
        return io.StringIO(to_yaml(data))

    def __panel__(self):
        return self.body
