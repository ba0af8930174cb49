"""The Models page: a data model run live with its sampler pair, the model's own metric against steps.

Built only when its tab is first opened (app/views/page.py). The runs advance on workers (app/model/models.py);
a FrameLoop on the session's document takes their new metric points while playing and streams them into the
figure, one message a frame. `lang` is the language of its words; changing it relabels the page and keeps the run.
"""
from __future__ import annotations

import asyncio
import html
import math
import re
import time

import panel as pn
import param
from bokeh.models import ColumnDataSource, HoverTool, Line, Range1d
from panel.viewable import Viewer

from ..model.config import refusal
from ..model.i18n import DEFAULT_LANG, LANGS, N_, tr, tr_message
from ..model.models import (
    ModelsConfig,
    ModelsLab,
    apply_models_query,
    model_options,
    write_csv,
    write_json,
)
from ..model.reasons import Notice, NoticeKind
from ..model.urlstate import quoted
from .controls import SettingFields, error_html, play_button
from .frame_loop import FrameLoop, session_schedule
from .lab import TEXT_EVERY_S, alert_html
from .plots import (
    RUN_COLORS,
    RUN_DASH,
    RUN_MARKS,
    add_glyph,
    add_legend,
    fmt,
    lighten,
    new_figure,
    stand_in_source,
)

MODELS_CSS = """
@media (max-width: 700px) {
  :host { gap: 4px; }
  .models-controls { flex: 1 1 100% !important; width: 100% !important; }
  .models-main { order: -1; }
}
"""
PLOT_HEIGHT = 360


def models_summary(lab: ModelsLab, values=None, lang: str = DEFAULT_LANG) -> str:
    """The metric of both samplers now, the step and the updates per second; each number carries
    data-models="<name>" so that tests can read it."""
    runs = lab.runs
    if runs is None:
        text = tr("building the model… (generating or loading its data)", lang) if lab.building else ""
        return f"<div class='models-building' style='font-size:15px;color:#555'>{text}</div>"
    model = runs.model
    values = runs.last() if values is None else values
    better = tr("lower is better", lang) if model.lower_is_better else tr("higher is better", lang)
    sides = []
    for side, v in zip(runs.sides, values):
        color = RUN_COLORS.get(side.label, "#1f77b4")
        label, title = side.label.lower(), html.escape(tr_message(side.title, lang))
        sides.append(f"<div style='border-left:6px solid {color};padding:2px 10px;flex:1 1 200px;min-width:0'>"
                     f"<div style='font-size:14px;font-weight:600'>{side.label}: {title}</div>"
                     f"<div style='font-size:20px;font-family:monospace'><b data-models='value-{label}'>"
                     f"{fmt(v, 4)}</b></div></div>")
    rate = lab.rate
    building = tr(" · <i>building…</i>", lang) if lab.building else ""
    numbers = tr("step <b data-models='step'>{t}</b> · <b data-models='rate'>{rate}</b> updates/s", lang,
                 t=f"{runs.t:,}", rate=fmt(rate, 3) if rate is not None else "–")
    return (f"<div class='models-row' style='display:flex;flex-wrap:wrap;gap:6px 16px;align-items:center'>"
            f"{''.join(sides)}<div style='font-size:13px;color:#444'>{html.escape(tr(model.metric_name, lang))} "
            f"({better})<br>{numbers}{building}</div></div>")


# The Models page's own messages, which its model writes in English (app/model/models.py), as templates: a message
# that matches one is worded through the catalogue; any other (the lab's refusals, a library's message) goes
# through i18n.tr_message (app/locale/ja/messages.toml). Fields that hold a message are translated in turn.
MODEL_MESSAGES = (
    N_("{n} of {chains} chains of {sampler} diverged by step {t} and were frozen (left out of the metric) — try a "
       "smaller step size, e.g. {eps}."),
    N_("{n} of {chains} chains of {sampler} diverged by step {t} and were frozen (left out of the metric)."),
    N_("{error}. Change the step size (smaller usually helps) or reset."),
    N_("the model could not be built: {reason}"),
    N_("building the model {model} took longer than {limit} s: given up"),
)
_MESSAGE_PATTERNS = [(re.compile("".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)"
                                         for i, part in enumerate(re.split(r"\{(\w+)\}", template))) + r"\Z", re.S),
                      template) for template in MODEL_MESSAGES]


def model_message(text: str, lang: str = DEFAULT_LANG) -> str:
    """A message of the Models page's model, in the language."""
    if lang == DEFAULT_LANG or not text:
        return text
    for pattern, template in _MESSAGE_PATTERNS:
        m = pattern.match(text)
        if m is not None:
            fields = {k: tr_message(v, lang) if k in ("error", "reason") else v for k, v in m.groupdict().items()}
            return tr(template, lang, **fields)
    return tr_message(text, lang)


def error_alert(error: str, lang: str = DEFAULT_LANG) -> dict:
    """The box saying why there is no run (the build failed), escaped; hidden when there is none."""
    return dict(object=alert_html(html.escape(model_message(error, lang)), "danger") if error else "",
                visible=bool(error))


def models_notice(notice, lang: str = DEFAULT_LANG) -> dict:
    """The message box for the page's notice (None: hidden); the model writes it in English, it is shown in the
    page's language (app/model/i18n.py: tr_message), again when the language changes."""
    if notice is None:
        return dict(object="", visible=False)
    return dict(object=alert_html(html.escape(model_message(notice.message, lang)), notice.level), visible=True)


def model_info(lab: ModelsLab, lang: str = DEFAULT_LANG) -> str:
    runs = lab.runs
    if runs is None:
        return ""
    m = runs.model
    pair = tr(" against ", lang).join(f"{s.label}: {html.escape(s.key)}" for s in runs.sides)
    batch = tr("minibatches of {n}", lang, n=m.batch) if m.batch else tr("full-data gradients", lang)
    # the description is the library's (its numbers are the data's): in English, said so to a screen reader
    about = html.escape(m.description or m.title)
    if lang != DEFAULT_LANG:
        about = f"{html.escape(tr(m.title, lang))}: <span lang='en'>{about}</span>"
    return ("<div style='font-size:12px;color:#444'>" + tr(
        "{about} (dimension {dim}).<br>{pair}; {batch}; {chains} chains; score: {metric} of the chains' current "
        "states.", lang, about=about, dim=m.potential.dim, pair=pair, batch=batch, chains=runs.chains,
        metric=html.escape(tr(m.metric_name, lang))) + "</div>")


class MetricPlot:
    """The metric of both samplers against the step: one line each, streamed."""

    def __init__(self, lang: str = DEFAULT_LANG):
        self.lang = lang
        # fixed ranges fitted to the data (an auto range over no data, or over the legend's NaN stand-ins, has Bokeh
        # warn "could not set initial ranges" in the console at every redraw)
        self.fig = new_figure("", PLOT_HEIGHT, x_axis_label=tr("step", lang), x_range=Range1d(0, 1),
                              y_range=Range1d(0, 1))
        self.fig.name = "models-metric"
        blank = stand_in_source()
        self.sources, entries = [], []
        self.hovers = []
        for label in ("A", "B"):
            src = ColumnDataSource(dict(t=[], v=[]), name=f"models-{label.lower()}")
            style = dict(line_color=RUN_COLORS[label], line_width=2, line_dash=RUN_DASH[label])
            live = add_glyph(self.fig, Line(x="t", y="v", **style), src)
            entries.append((label, live, add_glyph(self.fig, Line(**style), blank)))
            self.sources.append(src)
            # each curve's values under the pointer (Bokeh's hover: the curves stream, which HoloViews would redraw
            # whole at every frame, benchmarks/holoviews_cost.py)
            self.hovers.append(HoverTool(renderers=[live], mode="vline", tooltips=self._tips(label, "value"),
                                         formatters={"@v": "printf"}))
        self.fig.add_tools(*self.hovers)
        self.legend = add_legend(self.fig, entries, "top_right")
        lighten([self.fig])

    @staticmethod
    def _tips(label: str, metric: str, lang: str = DEFAULT_LANG) -> list:
        return [(tr("sampler", lang), label), (tr("step", lang), "@t{0,0}"), (metric, "@v{%0.4g}")]

    def show(self, runs) -> None:
        """New runs: their titles, the metric's name, and their history so far."""
        self.relabel(runs)
        # where the curves are not: they start high and fall (lower is better) or start low and rise
        self.legend.location = "top_right" if runs.model.lower_is_better else "bottom_right"
        self.add(True, *runs.take_points()[1:])

    def relabel(self, runs, lang: str | None = None) -> None:
        """The title and axes in the language (the curves stay)."""
        self.lang = lang or self.lang
        self.fig.xaxis.axis_label = tr("step", self.lang)
        if runs is None:
            return
        for item, side in zip(self.legend.items, runs.sides):
            item.label = dict(value=f"{RUN_MARKS[side.label]} {side.label}: {tr_message(side.title, self.lang)}")
        metric = tr(runs.model.metric_name, self.lang)
        self.fig.title.text = tr("{metric} against steps", self.lang, metric=metric)
        self.fig.yaxis.axis_label = metric
        for hover, label in zip(self.hovers, ("A", "B")):
            hover.tooltips = self._tips(label, metric, self.lang)

    def add(self, whole: bool, steps, values) -> None:
        # a list each: a source's stream extends its columns in place
        for src, v in zip(self.sources, values):
            if whole:
                src.data = dict(t=list(steps), v=v)
            elif steps:
                src.stream(dict(t=list(steps), v=v))
        self._fit()

    def _fit(self) -> None:
        ts = [float(t) for src in self.sources for t in src.data["t"]]
        vs = [float(v) for src in self.sources for v in src.data["v"] if v == v and abs(v) != float("inf")]
        if not ts or not vs:
            return
        lo, hi = min(vs), max(vs)
        pad = 0.05 * (hi - lo) if hi > lo else max(abs(hi) * 0.05, 1e-9)
        self.fig.x_range.update(start=min(ts), end=max(ts) if max(ts) > min(ts) else min(ts) + 1)
        self.fig.y_range.update(start=lo - pad, end=hi + pad)


class ModelsView(Viewer):
    """The Models page: controls on the left, the metric's summary and curves on the right."""

    lang = param.Selector(default=DEFAULT_LANG, objects=list(LANGS), doc="the language of the page's words")

    def __init__(self, config: ModelsConfig | None = None, errors=(), schedule=None, **params):
        super().__init__(**params)
        self.cfg = config or ModelsConfig()
        self.lab = lab = ModelsLab(self.cfg, schedule=schedule)
        if errors:
            lab.notice = Notice(NoticeKind.LINK, "Some of the link was ignored: " + "; ".join(errors))
        self._text_at = 0.0
        self._eps_shown = False      # a step-size field is being set to the value in use: not an edit
        self.plot = MetricPlot(self.lang)
        self.loop = FrameLoop(self._frame, active=lambda: self.lab.playing, ready=lambda: True,
                              on_error=lab.failed)

        self.alert = pn.pane.HTML(refs=pn.bind(models_notice, lab.param.notice, self.param.lang),
                                  sizing_mode="stretch_width",
                                  css_classes=["models-message"], margin=(5, 10), disable_math=True)
        self.block_alert = pn.pane.HTML(refs=pn.bind(error_alert, lab.param.error, self.param.lang),
                                        sizing_mode="stretch_width", css_classes=["models-blocked"], margin=(5, 10),
                                        disable_math=True)
        self.summary = pn.pane.HTML(models_summary(lab, lang=self.lang), sizing_mode="stretch_width",
                                    css_classes=["models-summary"],
                                    margin=(2, 10), disable_math=True)
        self.main = pn.Column(self.alert, self.block_alert, self.summary,
                              pn.pane.Bokeh(self.plot.fig, sizing_mode="stretch_width"),
                              sizing_mode="stretch_width", styles={"flex": "1 1 480px", "min-width": "0"},
                              css_classes=["models-main"])
        self._build_controls()
        lab.param.watch(lambda e: self.loop.with_lock(self._show_runs), "version")
        lab.param.watch(lambda e: self.loop.with_lock(self._pull), "stepped")
        lab.param.watch(self._on_playing, "playing")
        lab.param.watch(lambda e: self._text(force=True), ["building", "error"])
        self.cfg.param.watch(self._follow, ["model", "eps_a", "eps_b", "chains", "seed"])
        if lab.runs is not None:
            self._show_runs()

    def _build_controls(self):
        lab, cfg = self.lab, self.cfg
        self.select = pn.widgets.Select(name=tr("Model", self.lang), options=self._model_options(), value=cfg.key,
                                        sizing_mode="stretch_width", css_classes=["models-select"])
        self.select.param.watch(self._on_model, "value")
        self.info = pn.pane.HTML(model_info(lab, self.lang), sizing_mode="stretch_width", margin=(0, 10),
                                 css_classes=["models-info"])
        state = (lab.param.playing, lab.param.building, lab.param.error, lab.param.version)
        self.play = play_button(self._play_state, state, "models-play")
        self.step = pn.widgets.Button(name=tr("Step", self.lang), css_classes=["models-step"], width=70,
                                      disabled=pn.bind(lambda *_: not lab.can_run, *state))
        self.reset = pn.widgets.Button(name=tr("Reset", self.lang), css_classes=["models-reset"], width=70)
        self.play.on_click(lambda e: lab.pause() if lab.playing else lab.play())
        self.step.on_click(lambda e: lab.step(1))
        self.reset.on_click(lambda e: lab.reset())
        self.eps = {}
        for side in ("a", "b"):
            self.eps[side] = pn.widgets.TextInput(name=tr("Step size {side}", self.lang, side=side.upper()),
                                                  sizing_mode="stretch_width",
                                                  css_classes=[f"models-eps-{side}"])
            self.eps[side].param.watch(lambda e, s=side: self._on_eps(s, e.new), "value")
        self.eps_error = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10), css_classes=["models-eps-error"])
        # bounds are ModelsConfig's, checked by `settings` (the browser's own would clamp without a word)
        self.settings = SettingFields(cfg, "models-settings-error", self.lang)
        self.chains = self.settings.field(pn.widgets.IntInput, "chains", sizing_mode="stretch_width",
                                          css_classes=["models-chains"])
        self.seed = self.settings.field(pn.widgets.IntInput, "seed", sizing_mode="stretch_width",
                                        css_classes=["models-seed"])
        self.csv = pn.widgets.FileDownload(callback=self._csv, filename="metric.csv",
                                           label=tr("Metric (CSV)", self.lang),
                                           button_type="primary", sizing_mode="stretch_width",
                                           css_classes=["models-csv"])
        self.json = pn.widgets.FileDownload(callback=self._json, filename="metric.json",
                                            label=tr("Metric (JSON)", self.lang),
                                            button_type="primary", sizing_mode="stretch_width",
                                            css_classes=["models-json"])
        self._show_eps()
        self.run_heading = pn.pane.HTML(tr("<b>Run</b>", self.lang), margin=(5, 10))
        self.export_heading = pn.pane.HTML(self._export_text(), margin=(5, 10))
        self.controls = pn.Column(
            self.select, self.info, self.run_heading,
            pn.Row(self.play, self.step, self.reset),
            pn.Row(self.eps["a"], self.eps["b"], sizing_mode="stretch_width"), self.eps_error,
            pn.Row(self.chains, self.seed, sizing_mode="stretch_width"), self.settings.message,
            self.export_heading,
            pn.Row(self.csv, self.json, sizing_mode="stretch_width"),
            width=300, css_classes=["models-controls"], styles={"flex": "0 0 300px"}, margin=(0, 5))

    def _model_options(self) -> dict:
        return {tr(title, self.lang): key for title, key in model_options().items()}

    def _export_text(self) -> str:
        return tr("<b>Export</b> <span style='font-size:12px;color:#555'>(the metric's history of both samplers, at "
                  "most 2000 points each, and the settings; the URL holds the configuration)</span>", self.lang)

    @param.depends("lang", watch=True)
    def _relabel(self) -> None:
        """Another language: every word of the page; the run, its curves and the fields' values stay."""
        lang = self.lang
        self.select.param.update(name=tr("Model", lang), options=self._model_options(), value=self.cfg.key)
        self.step.name, self.reset.name = tr("Step", lang), tr("Reset", lang)
        self.play.name = tr("Pause", lang) if self.lab.playing else tr("Play", lang)
        self.csv.label, self.json.label = tr("Metric (CSV)", lang), tr("Metric (JSON)", lang)
        self.run_heading.object = tr("<b>Run</b>", lang)
        self.export_heading.object = self._export_text()
        self.settings.relabel(lang)
        self._show_eps()
        self.plot.relabel(self.lab.runs, lang)
        self.info.object = model_info(self.lab, lang)
        self._text(force=True)

    # -- controls ---------------------------------------------------------------------------------------
    def _play_state(self, playing, *_) -> dict:
        return dict(name=tr("Pause", self.lang) if playing else tr("Play", self.lang),
                    button_type="warning" if playing else "success",
                    disabled=not playing and not self.lab.can_run and not self.lab.building)

    def _on_model(self, event):
        if event.new != self.cfg.key:
            # another model starts from its own step sizes and chains
            self.cfg.param.update(model=event.new, eps_a=None, eps_b=None, chains=None)

    def _on_eps(self, side: str, text: str):
        if self._eps_shown:
            return
        text = (text or "").strip()
        name = f"eps_{side}"
        if text in ("", "auto"):
            value = None
        else:
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            why = refusal(self.cfg, name, value) if math.isfinite(value) else \
                tr("{label}: {text} is not a number (not applied)", self.lang,
                   label=tr(self.cfg.param[name].label, self.lang), text=quoted(text))
            if why:
                self.eps_error.object = error_html(why)
                self._show_eps(refused=side)      # the field shows the step size in use
                return
        self.eps_error.object = ""
        if getattr(self.cfg, name) != value:
            setattr(self.cfg, name, value)

    def _show_eps(self, refused: str | None = None):
        """The step-size fields: the configured value, or the model's own as the placeholder; `refused`: that
        side's field holds a refused text, which goes."""
        runs = self.lab.runs
        for side, label in (("a", "A"), ("b", "B")):
            value = getattr(self.cfg, f"eps_{side}")
            field = self.eps[side]
            field.name = tr("Step size {side}", self.lang, side=label)
            if runs is not None:
                s = runs.sides[0 if side == "a" else 1]
                field.name = tr("Step size {side} ({sampler})", self.lang, side=label, sampler=s.key)
                own = runs.model.params.get(s.key, {}).get("eps")
                field.placeholder = f"{own:g}" if own is not None else "auto"
            shown = "" if value is None else f"{value:g}"
            if (field.value or "").strip() != shown:
                try:
                    stale = side == refused or shown == "" or float(field.value) != value
                except ValueError:
                    stale = True
                if stale:
                    self._eps_shown = True
                    try:
                        field.value = shown
                    finally:
                        self._eps_shown = False

    def _follow(self, *_):
        """The configuration changed elsewhere (a link, back/forward): the fields show it."""
        if self.select.value != self.cfg.key:
            self.select.value = self.cfg.key
        self._show_eps()
        self.eps_error.object = ""        # the configuration holds checked values: no refusal stands beside them

    # -- plots ------------------------------------------------------------------------------------------
    def _show_runs(self):
        runs = self.lab.runs
        if runs is None:
            return
        self.plot.show(runs)
        self.info.object = model_info(self.lab, self.lang)
        if self.chains.value is None:
            self.chains.placeholder = f"{runs.chains}"
        self._show_eps()
        self._text(force=True)

    def _pull(self):
        self.plot.add(*self.lab.take_points())
        self._text()

    def _text(self, force: bool = False):
        now = time.monotonic()
        if force or not self.lab.playing or now - self._text_at >= TEXT_EVERY_S:
            self._text_at = now
            self.summary.object = models_summary(self.lab, lang=self.lang)

    # -- frame loop -------------------------------------------------------------------------------------
    def attach(self, doc) -> None:
        self.loop.attach(doc)

    def _on_playing(self, event):
        if event.new:
            self.loop.start()
        else:
            self.loop.stop()
            self.loop.with_lock(self._pull)

    def _frame(self):
        self._pull()

    def present(self, on: bool) -> None:
        self.controls.visible = not on

    def stop(self):
        self.loop.close()
        self.lab.close()

    # -- exports ----------------------------------------------------------------------------------------
    async def _csv(self):
        if self.lab.runs is None:
            return None
        self.csv.filename = self.lab.file_name("csv")
        return await asyncio.get_running_loop().run_in_executor(None, write_csv, self.lab.export_data())

    async def _json(self):
        if self.lab.runs is None:
            return None
        self.json.filename = self.lab.file_name("json")
        return await asyncio.get_running_loop().run_in_executor(None, write_json, self.lab.export_data())

    def __panel__(self):
        return pn.FlexBox(self.controls, self.main, flex_wrap="wrap", sizing_mode="stretch_width",
                          css_classes=["models-page"], stylesheets=[MODELS_CSS])


def models_view(query: dict, errors=(), doc=None, lang: str = DEFAULT_LANG) -> ModelsView:
    """The page for a link's configuration (its bad items already reported in `errors`)."""
    cfg = ModelsConfig()
    errors = list(errors) + apply_models_query(cfg, query)
    return ModelsView(cfg, errors, schedule=session_schedule(doc), lang=lang)
