"""The lab page: controls on the left, live plots and metrics on the right, the recipe below.

While the lab plays, a FrameLoop on this session's document advances the runs and pushes their
aggregates into the figures (see frame_loop.py); the loop stops with the session.
"""
from __future__ import annotations

import asyncio
import html

import numpy as np
import panel as pn
import param
from bokeh.layouts import column
from panel.io.state import set_curdoc
from panel.viewable import Viewer

from ..model.design import DESIGN, uses_design
from ..model.exports import csv_tables, file_name, npz_arrays, write_csv, write_npz
from ..model.i18n import DEFAULT_LANG, LANGS, N_, tr, tr_message
from ..model.lab import RESIDUAL_OK, Lab
from ..model.presets import differences
from ..model.urlstate import to_query
from .controls import CompareControls, PotentialPicker, RunControls, SamplerPicker
from .design import DesignEditor, design_side
from .frame_loop import FrameLoop
from .ladder import LadderView
from .plots import RUN_COLORS, RUN_MARKS, KLHistory, RunPlots, fmt, lighten, show_html, text_size
from .recipe_editor import RecipeEditor
from .residual_map import ResidualMapView

# Panel renders each component in its own shadow root: these rules go on the component whose shadow root
# holds the elements they style (the lab's flex box holds the controls' and main column's hosts)
# Below 1000 px (a laptop at 150 % zoom, a tablet, a phone) the plots take the whole width and the controls follow
# them at full width, in reach by scrolling (or Tab): Play, Step, Reset and the pair picker head the plots at any
# width, so nothing needed to run the lesson is below the fold or folded away.
LAB_CSS = """
@media (max-width: 1000px) {
  :host { gap: 4px; }
  .lab-controls { flex: 1 1 100% !important; width: 100% !important; }
  .lab-main { order: -1; }
}
"""
TOP_CSS = """
@media (max-width: 1000px) { .controls-toggle { display: none !important; } }
"""
SUMMARY_CSS = """
.ab-title { font-size: 15px; font-weight: 600; }
.ab-numbers { font-size: 22px; font-family: monospace; white-space: nowrap; }
.ab-ratio { font-size: 15px; }
.badge { white-space: nowrap; font-size: 13px; font-weight: 600; }
.ab-accuracy { font-size: 13px; }
.ab-same { font-size: 12px; color: #444; }
.ab-say { font-size: 13px; color: #222; }
@media (max-width: 1000px) {
  .ab-title { font-size: 14px; }
  .ab-numbers { font-size: 18px; }
  .ab-ratio, .badge, .ab-accuracy { font-size: 12px; }
}
:host(.present) .ab-title { font-size: 22px; }
:host(.present) .ab-numbers { font-size: 30px; }
:host(.present) .ab-ratio, :host(.present) .badge, :host(.present) .ab-accuracy,
:host(.present) .ab-same, :host(.present) .ab-say { font-size: 20px; }
/* projector type: a side is at least as wide as its numbers (they stay on one line), so A, B and the ratio wrap onto
   lines of their own rather than overlap (at 150 % zoom A's TV ran into B's KL) */
:host(.present) .ab-side { min-width: auto !important; }
@media (max-width: 1000px) { :host(.present) .ab-numbers { font-size: 24px; } }
"""
BUILDING_HTML = "<div class='lab-building' style='font-size:15px;color:#555'>{}</div>"
KL_LATER_HTML = "<div class='kl-later' style='font-size:12px;color:#555'>{}</div>"


def building_html(lang: str = DEFAULT_LANG) -> str:
    return BUILDING_HTML.format(tr("building the run…", lang))


def kl_later_html(lang: str = DEFAULT_LANG) -> str:
    return KL_LATER_HTML.format(tr("The KL to the exact density, step by step, is drawn here once the run steps.",
                                   lang))
TEXT_EVERY_S = 0.5     # the metrics numbers refresh twice a second (see RunPlots.update)


# messages are plain text in an HTML box: an Alert pane is Markdown, which turns a link's text such as
# "[log in](http://…)" or "![](http://…/pixel.png)" into a live link or an image fetched from anywhere
ALERT_STYLE = {"warning": "background:#fff3cd;color:#664d03;border:1px solid #ffecb5",
               "danger": "background:#f8d7da;color:#842029;border:1px solid #f5c2c7"}


def alert_html(text: str, level: str) -> str:
    return (f"<div role='alert' style='{ALERT_STYLE[level]};border-radius:6px;padding:10px 14px;"
            f"white-space:pre-wrap;overflow-wrap:anywhere'>{text}</div>")


def notice_alert(notice, lang: str = DEFAULT_LANG) -> dict:
    """The message box's parameters for the lab's notice (None: hidden); the model words it in English, the
    catalogue's templates in the language."""
    if notice is None:
        return dict(object="", visible=False)
    return dict(object=alert_html(html.escape(tr_message(notice.message, lang)), notice.level), visible=True)


def blocks_alert(blocks: dict, lang: str = DEFAULT_LANG) -> dict:
    """The blocked box's parameters: every reason the run cannot start, one per line."""
    text = "<br>".join(html.escape(tr_message(b.message, lang)) for b in blocks.values())
    return dict(object=alert_html(text, "danger") if blocks else "", visible=bool(blocks))


# Two verdicts that must not be confused (issue 25): whether the recipe leaves exp(−H) stationary (its
# Fokker–Planck residual: a property of the continuous dynamics), and whether this run at this ε is accurate
# (its KL against the KL an unbiased sampler with as many effective samples would show). The second is only
# claimed once histograms accumulate, and between the two thresholds it is not decidable yet.
AT_FLOOR, ABOVE_FLOOR = 2.0, 4.0


def times(r: float) -> str:
    """A ratio as people read it: 150×, 12×, 1.5× (never 1.5e+02×)."""
    if not np.isfinite(r):
        return "–"
    return f"{r:,.0f}×" if r >= 10 else f"{r:.2g}×"


def recipe_badge(side, lang: str = DEFAULT_LANG) -> str:
    if side.exact:
        tip = tr("the recipe leaves exp(−H) stationary (its Fokker–Planck residual vanishes): the continuous "
                 "dynamics are exact; how accurate a run is at this ε is measured separately", lang)
        return (f"<span class='badge verdict ok' style='color:#1b5e20' title='{html.escape(tip, quote=True)}'>"
                f"{tr('✓ stationary recipe', lang)}</span>")
    tip = tr("exp(−H) is not stationary under these dynamics: however small ε, the samples settle on another law",
             lang)
    return (f"<span class='badge verdict bad' style='color:#b00020' title='{html.escape(tip, quote=True)}'>"
            f"{tr('✗ not stationary', lang)}</span>")


def accuracy(m: dict, lang: str = DEFAULT_LANG) -> tuple[str, str]:
    """(class, words) for the accuracy of this run at this ε: KL against its noise floor."""
    kl, floor = m.get("kl"), m.get("floor")
    if not m.get("accumulating"):
        return "pending", tr("accuracy at this ε: scored once the histogram accumulates (after burn-in)", lang)
    if kl is None or floor is None or not (np.isfinite(kl) and np.isfinite(floor)) or floor <= 0:
        return "pending", tr("accuracy at this ε: not decidable yet (too few effective samples)", lang)
    r = kl / floor
    if r <= AT_FLOOR:
        return "ok", tr("✓ accurate at this ε: KL at its noise floor ({floor})", lang, floor=f"{floor:.2g}")
    if r >= ABOVE_FLOOR:
        return "bad", tr("✗ biased at this ε: KL {ratio} its noise floor ({floor})", lang, ratio=times(r),
                         floor=f"{floor:.2g}")
    return "pending", tr("? not decidable yet: KL {ratio} its noise floor ({floor})", lang, ratio=times(r),
                         floor=f"{floor:.2g}")


ACCURACY_COLOR = {"ok": "#1b5e20", "bad": "#b00020", "pending": "#555"}


def same_and_different(sides, lang: str = DEFAULT_LANG) -> str:
    """What the two sides share and what besides the recipe sets them apart, in words."""
    shared, differ = differences(sides)
    if len(sides) != 2:
        return ""
    name = {"eps": "ε", "step size": tr(N_("step size"), lang)}     # the rest are parameters' names (links')
    same = ", ".join(f"{name.get(k, k)} = {html.escape(v)}" for k, v in shared.items() if k in ("eps", "h", "M", "C"))
    out = (tr("Same target, V, chains and seed; {same}.", lang, same=same) if same
           else tr("Same target, V, chains and seed.", lang))
    if differ:
        out += tr(" Differs: ", lang) + "; ".join(f"{name.get(k, k)} (A {html.escape(a)}, B {html.escape(b)})"
                                                  for k, (a, b) in differ.items())
    return f"<div class='ab-same'>{out}</div>"


SPREAD_SAYS = 0.03    # a histogram 3 % wider or narrower than the exact density is said to be (ESS ~5000: sd ±1 %)


def describe_run(side, m: dict, other: dict | None, lang: str = DEFAULT_LANG) -> str:
    """The text alternative of a side's histogram: one sentence, with the numbers a reader sees."""
    kl, spread = m.get("kl"), m.get("spread")
    who = side.label
    if spread is None or not np.isfinite(spread):
        shape = tr("{who}'s histogram is drawn against the exact density", lang, who=who)
    elif spread > 1 + SPREAD_SAYS:
        shape = tr("{who}'s histogram is wider than the exact density", lang, who=who)
    elif spread < 1 - SPREAD_SAYS:
        shape = tr("{who}'s histogram is narrower than the exact density", lang, who=who)
    else:
        shape = tr("{who}'s histogram is as wide as the exact density", lang, who=who)
    parts = [f"KL {fmt(kl, 2)}"]
    okb = other or {}
    if other is not None and kl and okb.get("kl") and m.get("accumulating") and okb.get("accumulating"):
        r, whose = kl / okb["kl"], "B" if side.label == "A" else "A"
        parts.append(tr("{ratio} {whose}'s", lang, ratio=times(r), whose=whose) if r >= 1 else
                     tr("{ratio} below {whose}'s", lang, ratio=times(1 / r), whose=whose))
    cls, words = accuracy(m)
    if cls != "pending":
        parts.append(tr("at its noise floor" if cls == "ok" else "above its noise floor", lang))
    return tr("{shape}: {parts}.", lang, shape=shape, parts=tr(", ", lang).join(parts))


def described(sides, metrics, lang: str = DEFAULT_LANG) -> str:
    """The text alternative of the live plots (an aria-live region): a sentence per side."""
    if not sides:
        return ""
    others = [metrics[1 - i] if len(metrics) == 2 else None for i in range(len(metrics))]
    text = tr(" ", lang).join(describe_run(s, m, o, lang) for s, m, o in zip(sides, metrics, others))
    return f"<div class='ab-say' data-describe='plots'>{html.escape(text)}</div>"


def summary_html(sides, metrics, lang: str = DEFAULT_LANG) -> str:
    """A against B in large type, first on the screen: KL and TV to the exact density, whether the recipe leaves
    the target stationary (✓/✗, from the Fokker–Planck residual where there is one), and, once the histograms
    accumulate, whether the run is accurate at this ε (KL against its noise floor)."""
    blocks = []
    for side, m in zip(sides, metrics):
        label = side.label.lower()
        color = RUN_COLORS.get(side.label, "#1f77b4")
        kl, tv = m.get("kl"), m.get("tv")
        cls, words = accuracy(m, lang)
        blocks.append(
            f"<div class='ab-side' style='border-left:6px {'solid' if side.label == 'A' else 'dashed'} {color};"
            f"padding:2px 10px;flex:1 1 240px;min-width:0'>"
            f"<div class='ab-title'><span aria-hidden='true' style='color:{color}'>{RUN_MARKS.get(side.label, '')}"
            f"</span> {html.escape(side.label)}: {html.escape(side.title_in(lang))} &nbsp;{recipe_badge(side, lang)}"
            "</div>"
            f"<div class='ab-numbers'>KL <b data-summary='kl-{label}'>{fmt(kl)}</b> &nbsp; "
            f"TV <b data-summary='tv-{label}'>{fmt(tv)}</b></div>"
            f"<div class='ab-accuracy accuracy-{cls}' data-summary='accuracy-{label}' "
            f"style='color:{ACCURACY_COLOR[cls]}'>{html.escape(words)}</div></div>")
    if metrics and not all(m.get("accumulating") for m in metrics):
        # before burn-in the numbers score the ensemble as it is now: a ratio would mean nothing yet
        blocks.append("<div class='ab-ratio' style='align-self:center;color:#555'>" +
                      tr("the ensemble now; the histograms accumulate after burn-in", lang) + "</div>")
    elif len(metrics) == 2 and all(m.get("kl") for m in metrics) and min(m["kl"] for m in metrics) > 0:
        a, b = metrics[0]["kl"], metrics[1]["kl"]
        ratio = (tr("KL of A is {ratio} that of B", lang, ratio=times(a / b)) if a >= b else
                 tr("KL of B is {ratio} that of A", lang, ratio=times(b / a)))
        blocks.append(f"<div class='ab-ratio' style='align-self:center;color:#444'>{ratio}</div>")
    return (f"<div class='ab-row' style='display:flex;flex-wrap:wrap;gap:6px 16px'>{''.join(blocks)}</div>"
            f"{same_and_different(sides, lang)}")


class LabView(Viewer):
    """The lab page; `compact` is the plots and messages alone (a lesson's embedded demo)."""

    lang = param.Selector(objects=list(LANGS), default=DEFAULT_LANG)

    def __init__(self, lab: Lab | None = None, compact: bool = False, recipe_open: bool = False, **params):
        super().__init__(**params)
        self.lab = lab = lab or Lab()
        self.compact = compact
        # a link with edited D or Q opens on its recipe: the edit is what it shows
        self._recipe_open = (recipe_open or lab.config.D is not None or lab.config.Q is not None
                             or uses_design(lab.config))
        self.cfg = lab.config
        self._fresh = False
        self.plots: list[RunPlots] = []
        self.kl = None
        self.loop = FrameLoop(self._frame, active=lambda: self.lab.playing, ready=self._ready,
                              on_error=lab.failed)

        self.alert = pn.pane.HTML(refs=pn.bind(notice_alert, lab.param.notice, self.param.lang),
                                  sizing_mode="stretch_width", css_classes=["lab-message"], margin=(5, 10),
                                  disable_math=True)
        self.block_alert = pn.pane.HTML(refs=pn.bind(blocks_alert, lab.param.blocks, self.param.lang),
                                        sizing_mode="stretch_width", css_classes=["lab-blocked"], margin=(5, 10),
                                        disable_math=True)
        self.summary = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["ab-summary"], margin=(2, 10),
                                    disable_math=True, stylesheets=[SUMMARY_CSS])
        # the plots' text alternative, updated with the run (an aria-live region: read out as it changes)
        self.say = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["plots-described"], margin=(0, 10),
                                disable_math=True, stylesheets=[SUMMARY_CSS])
        self.plot_area = pn.FlexBox(sizing_mode="stretch_width", flex_wrap="wrap", css_classes=["plot-area"])
        self.kl_area = pn.Column(sizing_mode="stretch_width")
        self.top = pn.Row(self.summary, sizing_mode="stretch_width", margin=0)
        self.presenting = False
        self.main = pn.Column(self.alert, self.block_alert, self.top, self.plot_area, self.say, self.kl_area,
                              sizing_mode="stretch_width", styles={"flex": "1 1 480px", "min-width": "0"},
                              css_classes=["lab-main"])
        if not compact:
            self._build_page()
        # these touch Bokeh models directly, hence through the loop's lock
        lab.param.watch(lambda e: self.loop.with_lock(self._rebuild_plots), "version")
        lab.param.watch(lambda e: self.loop.with_lock(self._push_metrics), "stepped")
        lab.param.watch(self._on_playing, "playing")
        # a first build that ends without runs (a sampler refusing the target) bumps no version: the summary
        # hears of it here, or it would say "building the run…" beside the error for good
        lab.param.watch(lambda e: self._on_building(), "building")
        self.param.watch(lambda e: self.loop.with_lock(self._on_lang), "lang")
        self._rebuild_plots()

    def _on_lang(self) -> None:
        """Every text in the new language: the runs, the figures and their data stay as they are."""
        lang = self.lang
        for child in self._worded():
            child.lang = lang
        for p in self.plots:
            p.relabel(lang)
        if self.kl is not None:
            self.kl.relabel(lang, [p.title for p in self.plots])
        elif self.plots:
            self.kl_area.objects = [pn.pane.HTML(kl_later_html(lang), margin=(0, 10))]
        if not self.compact:
            self._words()
        self._on_building()
        if self.plots:
            for p, side in zip(self.plots, self.lab.sides):
                p.show_metrics(p.last_metrics | self._extra(side))
            ms = [p.last_metrics for p in self.plots]
            self.summary.object = summary_html(self.lab.sides, ms, lang)
            self._describe(ms)

    def _worded(self) -> list:
        """The parts of the page with texts of their own (each has a `lang`)."""
        if self.compact:
            return []
        parts = [*self.controls_parts, self.ladder, self.editor, self.residual_map, self.designer]
        if self.compare_controls.picker_b is not None:
            parts.append(self.compare_controls.picker_b)
        return [p for p in parts if p is not None]

    def _words(self) -> None:
        """The full page's own texts in the language."""
        lang = self.lang
        self.design_button.name = tr("✎ Design your own sampler (H, D, Q)", lang)
        self.csv.label, self.npz.label = tr("Samples (CSV)", lang), tr("Samples (NPZ)", lang)
        self.run_heading.object = f"<b>{tr('Run', lang)}</b>"
        self.export_heading.object = (
            f"<b>{tr('Export', lang)}</b> <span style='font-size:12px;color:#555'>" + tr(
                "(every chain's states since burn-in, evenly thinned to at most 200 000 rows per sampler, or the "
                "current state before burn-in ends; plots: the save tool of each plot gives a PNG; the URL holds "
                "the whole configuration)", lang) + "</span>")
        self.toggle.description = tr("show or hide the controls", lang)
        self.show_controls(self.controls.visible)
        self.ladder_card.title = tr("Bias against step size: does the error vanish as ε → 0?", lang)
        self.recipe_card.title = self._card_title()

    def _describe(self, metrics) -> None:
        """The sentence changes only when its (rounded) words do: a screen reader reads each change."""
        text = described(self.lab.sides, metrics, self.lang)
        show_html(self.say, f"<div role='status' aria-live='polite'>{text}</div>" if text else "")

    def _on_building(self) -> None:
        if not self.lab.sides:
            self.summary.object = building_html(self.lang) if self.lab.building else ""

    def _build_page(self):
        """The controls, downloads and recipe editor around the plots (the full lab page)."""
        lab = self.lab
        button = dict(button_type="primary", sizing_mode="stretch_width")
        self.design_button = pn.widgets.Button(name="✎ Design your own sampler (H, D, Q)", button_type="light",
                                               sizing_mode="stretch_width", css_classes=["design-button"])
        self.design_button.on_click(self._open_design)
        self.csv = pn.widgets.FileDownload(callback=self._csv, filename="samples.csv", label="Samples (CSV)",
                                           css_classes=["csv-download"], **button)
        self.npz = pn.widgets.FileDownload(callback=self._npz, filename="samples.npz", label="Samples (NPZ)",
                                           css_classes=["npz-download"], **button)
        lang = self.lang
        self.run_controls = run = RunControls(lab, lang=lang)
        self.compare_controls = compare = CompareControls(lab, lang=lang)
        picker, sampler = PotentialPicker(lab, lang=lang), SamplerPicker(lab, "A", lang=lang)
        self.controls_parts = [picker, sampler, run, compare]
        self.run_heading = pn.pane.HTML("", margin=(5, 10))
        self.export_heading = pn.pane.HTML("", margin=(5, 10))
        self.controls = pn.Column(
            picker, sampler, self.design_button,
            self.run_heading, run,
            compare,
            self.export_heading,
            pn.Row(self.csv, self.npz, sizing_mode="stretch_width"),
            width=300, css_classes=["lab-controls"], styles={"flex": "0 0 300px"}, margin=(0, 5))
        # on a wide screen the controls may fold away for the plots' sake (below 1000 px they follow the plots
        # instead, and the button is not shown); the pair picker and Play, Step and Reset head the plots
        self.toggle = pn.widgets.Button(name="◀ Controls", button_type="light", width=100, margin=(8, 4),
                                        css_classes=["controls-toggle"], description="show or hide the controls")
        self.toggle.on_click(lambda e: self.show_controls(not self.controls.visible))
        compare.pair.styles = {"flex": "1 1 260px", "min-width": "0"}
        self.bar = pn.FlexBox(self.toggle, compare.pair, run.play, run.step, run.reset, flex_wrap="wrap",
                              align_items="flex-end", sizing_mode="stretch_width", css_classes=["lab-bar"],
                              stylesheets=[TOP_CSS])
        self.main.insert(2, self.bar)
        # the two cards' contents are 40 % of the page's models, and every model costs the server at the page's
        # open and in each frame's message: each card is built when first opened (docs/notes/page-open.md)
        self.ladder = None
        self.ladder_card = pn.Card(title="Bias against step size: does the error vanish as ε → 0?",
                                   sizing_mode="stretch_width", collapsed=True, css_classes=["ladder-card"])
        self.ladder_card.param.watch(self._open_ladder, "collapsed")
        self.main.append(self.ladder_card)
        self.editor = self.residual_map = None
        self._recipe_waits = False
        self.designer = None
        self.recipe_card = pn.Card(title=self._card_title(), sizing_mode="stretch_width",
                                   collapsed=not self._recipe_open, css_classes=["recipe-card"])
        self.recipe_card.param.watch(self._open_recipe, "collapsed")
        self.cfg.param.watch(self._on_mode, ["sampler", "sampler_b", "compare"])
        self.main.append(self.recipe_card)
        self._words()

    def _open_ladder(self, event) -> None:
        if not event.new and self.ladder is None:
            self.ladder = LadderView(self.lab, lang=self.lang)
            self.ladder_card.objects = [self.ladder]

    @property
    def recipe_open(self) -> bool:
        return not self.compact and not self.recipe_card.collapsed

    def _open_recipe(self, event) -> None:
        if not event.new:
            self.loop.with_lock(self._build_recipe)

    def _card_title(self) -> str:
        if uses_design(self.cfg):
            return tr("Design your own sampler: the state, K, D and Q, with Γ, the SDE, the update and where the "
                      "dynamics break stationarity", self.lang)
        return tr("Recipe (H, D, Q) of sampler A — edit D and Q, switch to the naive form, and see where the "
                  "dynamics break stationarity", self.lang)

    def _open_design(self, _event) -> None:
        if not uses_design(self.cfg):
            self.cfg.param.update(sampler=DESIGN, params={}, D=None, Q=None, naive=None)
        self.recipe_card.collapsed = False

    def _on_mode(self, *_) -> None:
        """The card holds the design editor while a side runs the design, else sampler A's D/Q editor."""
        self.recipe_card.title = self._card_title()
        if self.editor is not None:
            self._show_editor()

    def _show_editor(self) -> None:
        designing = uses_design(self.cfg)
        if designing and self.designer is None:
            self.designer = DesignEditor(self.lab, lang=self.lang)
        self.editor_column.objects = [self.designer if designing else self.editor]

    def _map_side(self, lab):
        """The residual map shows the design while a side runs it."""
        return design_side(lab) if uses_design(self.cfg) else (lab.sides[0] if lab.sides else None)

    def _build_recipe(self) -> None:
        # a design that fails has no run to show, and its editor is where it is fixed
        idle = not self.lab.runs and not uses_design(self.cfg)
        if not self.recipe_open or self.editor is not None or idle or self._recipe_waits:
            return
        doc = self.loop.doc
        if doc is not None and doc.session_context is not None:
            # built before the page has loaded (a link that opens the card), the card's contents could be lost
            # on their way to it under load (browser tests): Panel runs this at once once loaded, else on load
            self._recipe_waits = True
            with set_curdoc(doc):
                pn.state.onload(self._build_recipe_now)
            return
        self._build_recipe_now()

    def _build_recipe_now(self) -> None:
        self._recipe_waits = False
        if self.editor is not None or (not self.lab.runs and not uses_design(self.cfg)):
            return
        self.editor = RecipeEditor(self.lab, lang=self.lang)
        self.residual_map = ResidualMapView(self.lab, schedule=self.loop.with_lock, pick=self._map_side,
                                            lang=self.lang)
        self.editor_column = pn.Column(self.editor, sizing_mode="stretch_width",
                                       styles={"flex": "1 1 480px", "min-width": "0"})
        self._show_editor()
        self.recipe_card.objects = [pn.FlexBox(self.editor_column, self.residual_map, flex_wrap="wrap",
                                               sizing_mode="stretch_width")]

    def present(self, on: bool) -> None:
        """Presentation mode: controls folded away (Play, Step and Reset stay), the summary and the plots' text
        in large type."""
        self.presenting = on
        self.summary.css_classes = ["ab-summary", "present"] if on else ["ab-summary"]
        self.say.css_classes = ["plots-described", "present"] if on else ["plots-described"]
        self.loop.with_lock(self._text_size)
        if not self.compact:
            self.show_controls(not on)

    def _text_size(self) -> None:
        figs = [f for p in self.plots for f in p.figures] + ([self.kl.fig] if self.kl is not None else [])
        text_size(figs, self.presenting)

    def show_controls(self, visible: bool) -> None:
        self.controls.visible = visible
        self.toggle.name = tr("◀ Controls" if visible else "▶ Controls", self.lang)

    # -- plots ----------------------------------------------------------------------
    def _rebuild_plots(self):
        lab = self.lab
        self._build_recipe()
        log_view = self.cfg.log_view
        keys = [RunPlots.structure(run, side, log_view) for run, side in zip(lab.runs, lab.sides)]
        if keys and keys == [p.key for p in self.plots]:
            # same shape of figures: keep them and only reset their data (see RunPlots.structure)
            for p, run, side in zip(self.plots, lab.runs, lab.sides):
                p.rebind(run, side)
            if self.kl is not None:
                self.kl.reset([p.title for p in self.plots])
            self._push_metrics()
            return
        # new figures carry their first data already; touching them again in this callback would reach
        # the browser before Panel (which sends new models on the next tick) has sent the models
        shared = {}      # both runs on one target draw its exact density from the same models
        stepping = lab.playing or any(run.t for run in lab.runs)
        # a pair's phase planes, like the traces, wait for the first step: until then both show the same start
        # (same seed), and the histograms are what tells the two laws apart (a lone run's is its main picture)
        alone = len(lab.runs) == 1
        self.plots = [RunPlots(run, side, run.label, log_view, self.presenting, shared, trace=stepping,
                               phase=stepping or alone, lang=self.lang)
                      for run, side in zip(lab.runs, lab.sides)]
        lighten([f for p in self.plots for f in p.figures])
        for p, side in zip(self.plots, lab.sides):
            p.show_metrics(p.last_metrics | self._extra(side))
        self.summary.object = (summary_html(lab.sides, [p.last_metrics for p in self.plots], self.lang) if lab.sides
                               else building_html(self.lang) if lab.building else "")
        self._describe([p.last_metrics for p in self.plots])
        self.plot_area.objects = [p.layout() for p in self.plots]
        self._fresh = True            # the next frame waits one round, for Panel to send the new figures
        if self.kl is not None and len(self.kl.sources) == len(self.plots):
            self.kl.reset([p.title for p in self.plots])
        else:
            self.kl = None
            self.kl_area.objects = [pn.pane.HTML(kl_later_html(self.lang), margin=(0, 10))] if self.plots else []
            if lab.playing:
                self._make_kl()

    # The KL history and a phase plane's trace are empty until a run has stepped, and a good part of a page open's
    # models (so are a pair's phase planes, both the same start until then): they are built when Play is pressed or
    # a paused run steps, never inside a frame (a frame's stream
    # into their sources could reach the page before their models: "reference … isn't known").
    def _make_kl(self) -> None:
        if any([p.add_trace(self.presenting) for p in self.plots]):
            self._fresh = True
        if self.kl is not None or not self.plots:
            return
        self.kl = KLHistory(self.lab.runs, [p.title for p in self.plots], self.lang)
        if self.presenting:
            text_size([self.kl.fig], True)
        self.kl_area.objects = [pn.pane.Bokeh(column(self.kl.fig, sizing_mode="stretch_width"),
                                              sizing_mode="stretch_width")]
        self._fresh = True            # as after new figures: the next frame waits a round

    def _start_kl(self) -> bool:
        """Whether the KL history is there to update; a paused step builds it (False in that call: its models
        reach the browser after it)."""
        had = self.kl is not None
        if self.loop.in_frame:        # (the common case, every frame: nothing to check)
            return had
        missing = not had or any((p.trace is None and p.shows_trace) or p.phase_missing for p in self.plots)
        if missing and any(run.t for run in self.lab.runs):
            self._make_kl()
        return had

    def _extra(self, side):
        if side.residual is None:
            return {}
        ok = side.residual < RESIDUAL_OK
        return {"residual_text": f"{side.residual:.1e} {'✓' if ok else '✗'}"}

    def _push_metrics(self, force_kl: bool = False):
        text = not (self.lab.playing and self.loop.in_frame) or self.loop.text_due()
        force_kl = force_kl or not self.lab.playing
        kl = self._start_kl()
        score = text or force_kl or (kl and self.kl.due())
        ms = [p.update(run, self._extra(side) if score else None, text, score)
              for p, run, side in zip(self.plots, self.lab.runs, self.lab.sides)]
        if text:
            show_html(self.summary, summary_html(self.lab.sides, ms, self.lang))
            self._describe(ms)
        if kl:
            self.kl.update(ms, force_kl)

    # -- frame loop -------------------------------------------------------------------
    def attach(self, doc) -> None:
        """Bind the frame loop to this session's document (called by the app at session start)."""
        self.loop.attach(doc)

    def _on_playing(self, event):
        if event.new:
            self.loop.with_lock(self._make_kl)
            self.loop.start()
        else:
            self.loop.stop()
            self.loop.with_lock(self._push_metrics)   # the numbers of the last frame, now that it paused

    def _ready(self) -> bool:
        """False while the figures of new runs are not up in the browser yet (skips one frame)."""
        if self.loop.pending(self._rebuild_plots) or self.loop.pending(self._make_kl) or self._fresh:
            self._fresh = False
            return False
        return True

    def _frame(self):
        """One frame: advance, aggregate, update the sources."""
        self.lab.frame()
        self._push_metrics()

    def stop(self):
        """End of session: stop the loop, drop the runs (their memory goes with them)."""
        self.loop.close()
        if getattr(self, "ladder", None) is not None:
            self.ladder.close()
        self.lab.close()             # a build or map under way comes back to nobody
        self.lab.runs = []

    # -- exports ----------------------------------------------------------------------
    # the files take most of a second to format for 10^5 rows: on a worker, so other sessions play on.
    # What they hold is copied out of the live runs first, here on the loop, where the frames change them.
    async def _csv(self):
        self.csv.filename = file_name(self.lab.runs, "csv")   # read by the widget after this returns
        return await asyncio.get_running_loop().run_in_executor(None, write_csv, csv_tables(self.lab.runs))

    async def _npz(self):
        self.npz.filename = file_name(self.lab.runs, "npz")
        arrays = npz_arrays(self.lab.runs, to_query(self.cfg))
        return await asyncio.get_running_loop().run_in_executor(None, write_npz, arrays)

    def __panel__(self):
        # compact keeps the page's flex nesting: in plain nested Columns BokehJS lays the figures out at zero width
        parts = [self.main] if self.compact else [self.controls, self.main]
        return pn.FlexBox(*parts, flex_wrap="wrap", sizing_mode="stretch_width", css_classes=["lab-page"],
                          stylesheets=[LAB_CSS])
