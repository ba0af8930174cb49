"""A lesson's live demo, embedded in its page: the lesson's lab preset at a classroom size.

The run is built on the first press of "Run the demo here", so reading a page costs the server
nothing; it reuses the lab's model (Lab), frame loop and plots (LabView in compact form) and the
lab's play/step/reset buttons, and it pauses when the reader leaves the page or the tab.

The lesson's front matter names the demo's controls (fields for settings such as V and for the samplers'
parameters, one per side that has it) and the extra plots it draws (the kinetic temperature, the thermostat
ξ); app/model/demo_spec.py checks the page's "Try this" steps against them. Its link into the full lab opens
the settings the demo runs, edits included.

`lang` is the language of its words (its header, buttons, fields and plot titles); changing it relabels them and
keeps the run.
"""
from __future__ import annotations

import html
from urllib.parse import urlencode

import panel as pn
import param
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, Range1d
from bokeh.plotting import figure
from panel.viewable import Viewer

from samplers.registry import REGISTRY

from ..model.config import LabConfig
from ..model.demo_spec import control_sides, readouts
from ..model.i18n import DEFAULT_LANG, LANGS, tr, tr_message
from ..model.lab import Lab
from ..model.presets import default_params, potential_names, validate_params
from ..model.urlstate import apply_query, parse_search, to_query
from .controls import RunControls, SettingFields, error_html, shown_params
from .frame_loop import session_schedule
from .lab import LabView
from .plots import RUN_COLORS

EMBED_CHAINS = 1000     # enough for a smooth histogram; the full preset runs in the lab


def embedded_config(query: str) -> tuple[LabConfig, list[str]]:
    """The preset's configuration, with at most EMBED_CHAINS chains, and anything it had to ignore."""
    cfg = LabConfig()
    errors = apply_query(cfg, parse_search(query))
    cfg.chains = min(cfg.chains, EMBED_CHAINS)
    return cfg, errors


def describe(cfg: LabConfig, sides=None, lang: str = DEFAULT_LANG) -> str:
    """Who runs, by title: the built sides' titles (which say what an edit changed), or before the run is
    built (building it costs the server) the registered titles. The titles are the samplers' names (as in
    the lessons, in either language)."""
    if sides:
        titles = [side.title for side in sides]
    else:
        title_a = REGISTRY[cfg.sampler].title
        titles = [tr("naive form of {title}", lang, title=title_a) if cfg.naive and not REGISTRY[cfg.sampler].naive
                  else title_a]
        if cfg.compare:
            titles.append(REGISTRY[cfg.sampler_b].title)
    # a sampler's title as the lab words it (the catalogue's entry, or its template for a built side's title)
    who = tr(" beside ", lang).join(f"<b>{html.escape(tr_message(t, lang))}</b>" for t in titles)
    return tr("{who} on <b>{potential}</b>, {chains} chains, seed {seed}", lang, who=who,
              potential=html.escape(cfg.potential), chains=cfg.chains, seed=cfg.seed)


def lab_href(cfg: LabConfig, lang: str = DEFAULT_LANG) -> str:
    """The full lab on the demo's configuration as it is now (its chains, its edits), in the page's language,
    escaped for an href."""
    keep = {"lang": lang} if lang != DEFAULT_LANG else {}
    return html.escape("?" + urlencode({"tab": "lab", **to_query(cfg), **keep}), quote=True)


# Bokeh's green button is white on #5cb85c, a contrast of 2.5: a darker green reads at 5.6. A number field's
# spin buttons have no name for a screen reader: hidden (the arrow keys step the value as they did)
BUTTON_CSS = (".bk-btn-success { background-color: #1b7a3a; border-color: #176632; color: #fff; }"
              ".bk-btn-warning { background-color: #8a5300; border-color: #744600; color: #fff; }")
FIELD_CSS = ".bk-spin-btn { display: none !important; }"
HISTORY_ROLLOVER = 2000
SAMPLE_EVERY_MS = 400          # the extra histories take a point a few times a second while the demo plays
HISTORY_TITLES = {"kinetic temperature": "kinetic temperature r·r/d against step (1 at the target)",
                  "xi": "thermostat ξ against step: mean, and mean ± one standard deviation"}


def history_title(kind: str, lang: str = DEFAULT_LANG) -> str:
    return (tr("kinetic temperature r·r/d against step (1 at the target)", lang) if kind == "kinetic temperature"
            else tr("thermostat ξ against step: mean, and mean ± one standard deviation", lang))


class DemoHistory:
    """The demo's extra plots: each side's kinetic temperature, or its thermostat ξ, against the step. A
    live figure, so Bokeh streaming like the lab's own (benchmarks/holoviews_cost.py)."""

    def __init__(self, kinds: list[str], labels: list[str], lang: str = DEFAULT_LANG):
        self.kinds = kinds
        self.sources = [ColumnDataSource(dict(t=[], y=[], lo=[], hi=[]), name=f"history-{k}-{label}")
                        for k in kinds for label in labels]
        self.figures = []
        for i, kind in enumerate(kinds):
            fig = figure(title=history_title(kind, lang), height=200, sizing_mode="stretch_width",
                         x_range=Range1d(0, 100), y_range=Range1d(0, 2), x_axis_label=tr("step", lang),
                         y_axis_label="ξ" if kind == "xi" else "r·r/d", tools="pan,wheel_zoom,reset,save",
                         name=f"history-{kind}")
            fig.title.text_font_size = "13px"
            for j, label in enumerate(labels):
                src, color = self.sources[i * len(labels) + j], RUN_COLORS.get(label, "#1f77b4")
                if kind == "xi":
                    fig.varea(x="t", y1="lo", y2="hi", source=src, fill_color=color, fill_alpha=0.2)
                fig.line(x="t", y="y", source=src, line_color=color, line_width=2, legend_label=label,
                         line_dash="solid" if j == 0 else "dashed")
            fig.legend.location = "top_left"
            self.figures.append(fig)
        self.labels = labels
        self._t = -1

    def relabel(self, lang: str) -> None:
        for kind, fig in zip(self.kinds, self.figures):
            fig.title.text = history_title(kind, lang)
            fig.xaxis.axis_label = tr("step", lang)

    def push(self, runs) -> None:
        t = max((run.t for run in runs), default=0)
        if t < self._t:           # a reset or a rebuild: the history starts again
            for src in self.sources:
                src.data = dict(t=[], y=[], lo=[], hi=[])
        if t == self._t:
            return
        self._t = t
        for i, kind in enumerate(self.kinds):
            for j, run in enumerate(runs[:len(self.labels)]):
                r = readouts(run)
                if kind not in r:
                    continue
                y, sd = r[kind], r.get("xi_sd", 0.0)
                self.sources[i * len(self.labels) + j].stream(dict(t=[run.t], y=[y], lo=[y - sd], hi=[y + sd]),
                                                              HISTORY_ROLLOVER)
            fig = self.figures[i]
            ys = [v for src in self.sources[i * len(self.labels):(i + 1) * len(self.labels)]
                  for key in ("lo", "hi") for v in src.data[key]]
            if ys:
                lo, hi = min(ys), max(ys)
                pad = 0.1 * (hi - lo) + 0.05
                fig.y_range.update(start=min(fig.y_range.start, lo - pad), end=max(fig.y_range.end, hi + pad))
            fig.x_range.end = max(fig.x_range.end, 1.1 * t)


class LessonDemo(Viewer):
    lang = param.Selector(default=DEFAULT_LANG, objects=list(LANGS), doc="the language of the demo's words")

    def __init__(self, query: str, lab_href: str = "", doc=None, controls=(), plots=(), **params):
        super().__init__(**params)
        self.query, self._doc = query, doc
        self.cfg, errors = embedded_config(query)
        self.controls, self.plots = list(controls), list(plots)
        self.view: LabView | None = None
        self.history: DemoHistory | None = None
        self._lab: Lab | None = None
        self._timer = None
        self._errors = errors
        self.header = pn.pane.HTML(self._header(), sizing_mode="stretch_width", margin=(5, 10),
                                   css_classes=["lesson-demo-header"])
        self.top_link = pn.pane.HTML(self._top(), margin=(10, 10), css_classes=["lesson-demo-top"])
        # the links follow the demo's settings: the full lab opens what the demo runs
        self.cfg.param.watch(self._settings_changed, [p for p in self.cfg.param if p != "name"])
        self.start_button = pn.widgets.Button(name=tr("▶ Run the demo here", self.lang), button_type="success",
                                              width=200,
                                              css_classes=["lesson-demo-start"], stylesheets=[BUTTON_CSS])
        self.start_button.on_click(lambda e: self._start_soon())
        self._labels = []      # (widget, its label now): relabelled when the language changes
        self._buttons = None
        self.fields = self._fields()
        self.body = pn.Column(self.header, self.start_button, *self.fields, sizing_mode="stretch_width",
                              css_classes=["lesson-live-demo"],
                              styles={"border": "1px solid #ddd", "border-radius": "6px", "padding": "4px"})

    @property
    def lab_href(self) -> str:
        return lab_href(self.cfg, self.lang)

    def _header(self, sides=None) -> str:
        what = html.escape("; ".join(self._errors))
        note = (f"<br><span style='color:#b00020'>{tr('ignored: {what}', self.lang, what=what)}</span>"
                if self._errors else "")
        return tr("<b>Live demo</b>: {who} · <a class='lesson-demo' href='{href}'>open it in the full lab →</a>",
                  self.lang, who=describe(self.cfg, sides, self.lang), href=self.lab_href) + note

    def _top(self) -> str:
        return tr("A live demo runs further down this page · <a class='lesson-demo' href='{href}'>open it in the "
                  "full lab →</a>", self.lang, href=self.lab_href)

    @param.depends("lang", watch=True)
    def _relabel(self) -> None:
        """Another language: every word of the demo; its run, fields' values and plots stay."""
        self._settings_changed()
        if self.view is None and not self.start_button.disabled:
            self.start_button.name = tr("▶ Run the demo here", self.lang)
        elif self.view is None:
            self.start_button.name = tr("Building the run…", self.lang)
        for widget, label in self._labels:
            widget.name = label()
        if self.controls:
            self.settings.relabel(self.lang)
        if self.history is not None:
            self.history.relabel(self.lang)
        for part in (self.view, self._buttons):
            if part is not None and "lang" in part.param:
                part.lang = self.lang

    def _settings_changed(self, *_) -> None:
        self.header.object = self._header(self._lab.sides if self._lab is not None else None)
        self.top_link.object = self._top()

    # -- the controls the lesson names ---------------------------------------------------
    def _fields(self) -> list:
        """One field per setting, one per side for a sampler parameter; [] when the lesson names none."""
        if not self.controls:
            return []
        self.settings = SettingFields(self.cfg, "lesson-demo-error", self.lang)
        self.param_error = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10),
                                        css_classes=["lesson-demo-param-error"])
        samplers = [self.cfg.sampler] + ([self.cfg.sampler_b] if self.cfg.compare else [])
        widgets = []
        box = dict(width=130, margin=(4, 8), stylesheets=[FIELD_CSS])
        for name in self.controls:
            if name == "potential":
                widgets.append(pn.widgets.Select.from_param(self.cfg.param.potential, name=tr("Target", self.lang),
                                                            options=potential_names(), width=180, margin=(4, 8),
                                                            css_classes=["demo-control-potential"]))
                self._labels.append((widgets[-1], lambda: tr("Target", self.lang)))
            elif name == "V":
                widgets.append(self.settings.field(pn.widgets.FloatInput, "V", step=0.5, css_classes=["demo-control-V"],
                                                   **box))
            elif name in ("batch", "chains", "seed", "burn"):
                widgets.append(self.settings.field(pn.widgets.IntInput, name, css_classes=[f"demo-control-{name}"],
                                                   **box))
            for side in control_sides(name, samplers):
                widgets.append(self._param_field(name, side, box))
        row = pn.FlexBox(*widgets, flex_wrap="wrap", sizing_mode="stretch_width", css_classes=["lesson-demo-controls"])
        return [row, self.settings.message, self.param_error]

    def _param_field(self, name: str, side: int, box: dict) -> pn.widgets.TextInput:
        key = ("params", "params_b")[side]
        sampler = lambda: (self.cfg.sampler, self.cfg.sampler_b)[side]
        label = "AB"[side]
        shown = lambda: shown_params(sampler(), getattr(self.cfg, key)).get(name, "")
        field = pn.widgets.TextInput(name=f"{name} ({label}: {sampler()})", value=shown(),
                                     css_classes=[f"demo-control-{label.lower()}-{name}"], **box)

        def typed(event):
            text = str(event.new).strip()
            overrides = dict(getattr(self.cfg, key))
            default = default_params(sampler()).get(name)
            if text in ("", str(default)) or (default is None and text.lower() in ("auto", "none")):
                overrides.pop(name, None)
            else:
                overrides[name] = text
            reason = validate_params(sampler(), overrides)
            self.param_error.object = error_html(tr("{name} ({side}): {reason} (not applied)", self.lang, name=name,
                                                    side=label, reason=reason) if reason else "")
            if not reason and overrides != getattr(self.cfg, key):
                setattr(self.cfg, key, overrides)
        field.param.watch(typed, "value")
        return field

    # -- running -------------------------------------------------------------------------
    def attach(self, doc) -> None:
        self._doc = doc
        if self.view is not None:
            self.view.attach(doc)

    def _start_soon(self) -> None:
        """Say it is building before building: a data posterior's first build takes seconds, and the
        button's new label only reaches the browser once this callback has returned."""
        doc = self._doc or pn.state.curdoc
        if self.view is not None or doc is None or doc.session_context is None:
            self.start()
            return
        self.start_button.name, self.start_button.disabled = tr("Building the run…", self.lang), True
        doc.add_next_tick_callback(self.start)

    def lab(self) -> Lab:
        """The demo's lab, built on first use (the demo's run, or its step-size ladder)."""
        if self._lab is None:
            self._lab = Lab(self.cfg, schedule=session_schedule(self._doc or pn.state.curdoc))
            self._lab.param.watch(lambda e: setattr(self.header, "object", self._header(self._lab.sides)), "version")
        return self._lab

    def build(self) -> LabView:
        """The demo's plots and buttons (first time), without playing."""
        if self.view is None:
            lab = self.lab()
            self.view = LabView(lab, compact=True, **({"lang": self.lang} if "lang" in LabView.param else {}))
            self.view.attach(self._doc or pn.state.curdoc)
            self.header.object = self._header(lab.sides)
            self._buttons = buttons = RunControls(lab, **({"lang": self.lang} if "lang" in RunControls.param else {}))
            buttons.play.stylesheets = [*buttons.play.stylesheets, BUTTON_CSS]
            # a number field rather than the lab's slider: a slider's handle has no name a screen reader can say
            speed = pn.widgets.IntInput.from_param(self.cfg.param.speed, name=tr("Speed (steps per frame)", self.lang),
                                                   start=1,
                                                   end=1000, width=170, margin=(4, 8), stylesheets=[FIELD_CSS],
                                                   css_classes=["lesson-demo-speed"])
            self._labels.append((speed, lambda: tr("Speed (steps per frame)", self.lang)))
            row = pn.FlexBox(buttons.play, buttons.step, buttons.reset, speed, flex_wrap="wrap",
                             sizing_mode="stretch_width", css_classes=["lesson-demo-buttons"])
            extra = [k for k in self.plots if k in HISTORY_TITLES]
            parts = [self.header, row, *self.fields, self.view]
            if extra:
                self.history = DemoHistory(extra, ["A", "B"] if self.cfg.compare else ["A"], self.lang)
                # inside the lab view's main column, as its KL history is: a Bokeh pane beside the view in the
                # demo's column left the run's figures laid out at zero width
                self.view.main.append(pn.pane.Bokeh(self._history_layout(), sizing_mode="stretch_width",
                                                    css_classes=["lesson-demo-history"]))
                lab.param.watch(self._on_playing, "playing")
                lab.param.watch(lambda e: self._sample(), ["stepped", "version"])
            self.body.objects = parts
        return self.view

    def _history_layout(self):
        return column(*self.history.figures, sizing_mode="stretch_width")

    def start(self) -> None:
        """Build the run (first time) and play it."""
        self.build().lab.play()

    def _sample(self) -> None:
        if self.history is not None and self._lab is not None:
            self.view.loop.with_lock(lambda: self.history.push(self._lab.runs))

    def _on_playing(self, event) -> None:
        doc = self._doc or pn.state.curdoc
        if doc is None or doc.session_context is None:
            return
        if event.new and self._timer is None:
            self._timer = doc.add_periodic_callback(self._sample, SAMPLE_EVERY_MS)
        elif not event.new and self._timer is not None:
            doc.remove_periodic_callback(self._timer)
            self._timer = None
            self._sample()

    def plot_kinds(self) -> list[str]:
        """The figures the demo shows, by the names the lessons' front matter gives them."""
        kinds = []
        for p in self.view.plots if self.view is not None else []:
            if p.phase_missing:               # a pair's phase planes are drawn at the first step
                kinds.append("phase plane")
            elif p.main is not None:
                kinds.append("phase plane" if "phase plane" in p.main.title.text else "density")
            if p.shows_trace:
                kinds.append("trace")
            for fig in p.marginals:
                kinds.append("log histogram" if fig.title.text.startswith("log") else "histogram")
        if self.view is not None and self.view.plots:
            kinds.append("KL")
        kinds += self.history.kinds if self.history is not None else []
        return list(dict.fromkeys(kinds))

    def pause(self) -> None:
        if self.view is not None:
            self.view.lab.pause()

    def stop(self) -> None:
        if self._timer is not None and self._doc is not None:
            try:
                self._doc.remove_periodic_callback(self._timer)
            except ValueError:
                pass
            self._timer = None
        if self.view is not None:
            self.view.stop()

    def __panel__(self):
        return self.body
