"""The bias-against-step-size view: run the ladder for the lab's samplers and plot error against ε, log-log; and
the eps = auto control of a sampler's fields (autoeps.py)."""
from __future__ import annotations

import html
import io
from collections.abc import Callable

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, CustomJSTicker, HoverTool, Legend, LegendItem
from panel.viewable import Viewer

from samplers.ladder import AUTO_RUNGS
from samplers.registry import REGISTRY

from ..model.autoeps import AUTO, explain, wants_auto
from ..model.i18n import DEFAULT_LANG, LANGS, N_, tr, tr_message
from ..model.lab import Lab
from ..model.ladder import AutoEpsJob, LadderJob
from .plots import LOG_TICKS_JS, RUN_COLORS, new_figure, tool_words

POLL_MS = 250


def _reference(eps, start, slope):
    """A dashed reference line of the given slope through `start` at the largest ε."""
    return (start * (eps / eps[0]) ** slope).tolist()


class LadderView(Viewer):
    """Button, progress bar, cancel, two log-log plots (KL and |E θ₁² − exact| against ε) and a CSV download."""

    lang = param.Selector(objects=list(LANGS), default=DEFAULT_LANG)

    def __init__(self, lab: Lab | Callable[[], Lab], **params):
        """`lab`, or a function that builds it on the first run (a lesson page builds nothing until asked)."""
        super().__init__(**params)
        self._lab_source = lab
        self.job: LadderJob | None = None
        self.run = pn.widgets.Button(button_type="primary", width=230, css_classes=["ladder-run"])
        self.stop = pn.widgets.Button(button_type="light", width=90, css_classes=["ladder-cancel"], disabled=True)
        self.bar = pn.indicators.Progress(value=0, max=100, width=220, visible=False, css_classes=["ladder-progress"],
                                          margin=(14, 10))
        self.status = pn.pane.HTML("", css_classes=["ladder-status"], sizing_mode="stretch_width", margin=(0, 10))
        # a file-like object: a plain string would be taken for a path
        self.download = pn.widgets.FileDownload(callback=lambda: io.StringIO(self.job.csv() if self.job else ""),
                                                filename="step-ladder.csv",
                                                button_type="light", width=140,
                                                css_classes=["ladder-csv"], disabled=True)
        self.run.on_click(lambda e: self.start())
        self.stop.on_click(lambda e: self.job and self.job.cancel("cancelled"))
        self.figs, self.sources = self._figures()
        self._cb = None
        self.caption = caption = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        self._status = ("", "#444")
        self.body = pn.Column(
            pn.FlexBox(self.run, self.stop, self.bar, self.download, flex_wrap="wrap", sizing_mode="stretch_width"),
            self.status, caption,
            pn.FlexBox(*[pn.pane.Bokeh(f, sizing_mode="stretch_width", styles={"flex": "1 1 300px", "min-width": "0"})
                         for f in self.figs], flex_wrap="wrap", sizing_mode="stretch_width"),
            sizing_mode="stretch_width", css_classes=["ladder-view"])
        self._words()
        self.param.watch(self._words, "lang")

    def _words(self, *_) -> None:
        lang = self.lang
        self.run.name, self.stop.name = tr("Run the step-size ladder", lang), tr("Cancel", lang)
        self.download.label = tr("Ladder (CSV)", lang)
        self.caption.object = "<div style='font-size:12px;color:#444'>" + tr(
            "For each step size ε the chains run the same stretch of time (the SDE held fixed: gradient-noise "
            "diffusion B = εV/2 and momentum resampling as at A's ε), and the pooled samples are scored against "
            "the exact law: the joint law of (θ₁, θ₂) on a two-dimensional target, θ₁'s marginal elsewhere. A "
            "recipe's error falls with ε (dashed: slopes 1 and 2); a naive sampler's levels off "
            "at a floor. Dotted: the KL a perfect sampler would show with as many samples. PNG: the save tool of "
            "each plot.", lang) + "</div>"
        for f, label in zip(self.figs, (N_("KL to the exact density"), N_("|E[θ₁²] − exact|"))):
            f.title.text = tr("{label} against step size", lang, label=tr(label, lang))
            f.yaxis[0].axis_label = tr(label, lang)
            for item, slope in zip(f.legend[0].items[2:], (1, 2)):
                item.label = dict(value=tr("slope {slope}", lang, slope=slope))
            for hover in f.select(type=HoverTool):
                side = hover.tooltips[0][1]
                hover.tooltips = [(tr("sampler", lang), side), ("ε", "@eps{%0.4g}"), (tr(label, lang), "@y{%0.3g}")]
        tool_words(self.figs, lang)
        self._say(*self._status)

    def _say(self, text: str, color: str = "#444") -> None:
        self._status = (text, color)
        self.status.object = (f"<span style='color:{color};font-size:13px'>{html.escape(tr_message(text, self.lang))}"
                              "</span>" if text else "")

    def _figures(self):
        figs, sources = [], {}
        for key, label in (("kl", "KL to the exact density"), ("m2", "|E[θ₁²] − exact|")):
            f = new_figure(f"{label} against step size", 260, x_axis_type="log", y_axis_type="log", x_axis_label="ε",
                     y_axis_label=label)
            f.name = f"ladder-{key}"
            # a decade of ε: Bokeh's LogTicker would label only one or two points of it
            f.xaxis.ticker = CustomJSTicker(major_code=LOG_TICKS_JS)
            f.yaxis.ticker = CustomJSTicker(major_code=LOG_TICKS_JS)
            items = []
            for side in ("A", "B"):
                src = ColumnDataSource(dict(eps=[], y=[]), name=f"ladder-{key}-{side}")
                color = RUN_COLORS[side]
                line = f.line("eps", "y", source=src, color=color, line_width=2)
                points = f.scatter("eps", "y", source=src, color=color, size=7)
                # a reader reads each point's values off the plot (Bokeh's hover: HoloViews would redraw the whole
                # plot at each point the ladder adds, benchmarks/holoviews_cost.py)
                f.add_tools(HoverTool(renderers=[points], tooltips=[("sampler", side), ("ε", "@eps{%0.4g}"),
                                                                    (label, "@y{%0.3g}")],
                                      formatters={"@eps": "printf", "@y": "printf"}))
                items.append(LegendItem(label=side, renderers=[line]))
                sources[(key, side)] = src
                if key == "kl":
                    noise = ColumnDataSource(dict(eps=[], y=[]), name=f"ladder-noise-{side}")
                    f.line("eps", "y", source=noise, color=color, line_dash="dotted", line_width=1)
                    sources[("noise", side)] = noise
            for slope in (1, 2):
                ref = ColumnDataSource(dict(eps=[], y=[]), name=f"ladder-{key}-slope{slope}")
                r = f.line("eps", "y", source=ref, color="#888", line_dash="dashed", line_width=1)
                items.append(LegendItem(label=f"slope {slope}", renderers=[r]))
                sources[(key, f"slope{slope}")] = ref
            f.add_layout(Legend(items=items, location="bottom_right", label_text_font_size="8pt",
                                background_fill_alpha=0.6))
            f.toolbar.logo = None
            figs.append(f)
        return figs, sources

    # -- running -----------------------------------------------------------------
    def start(self):
        lab = self._lab_source if isinstance(self._lab_source, Lab) else self._lab_source()
        if not lab.sides and lab.building:
            # a lesson's lab is built on first use, on a worker: start when its samplers exist
            self._say(N_("building the samplers…"))
            waiting = []

            def built(event):
                lab.param.unwatch(waiting[0])
                self.start()
            waiting.append(lab.param.watch(built, "version"))
            return
        if self.job is None:
            self.job = LadderJob(lab)
            self.job.param.watch(self._on_status, "status")
            self.job.param.watch(self._on_progress, "progress")
            self.job.param.watch(self._draw, "results")
        self.job.start()
        doc = pn.state.curdoc
        if self.job.status == "running" and doc is not None and doc.session_context is not None:
            self._cb = doc.add_periodic_callback(self._poll, POLL_MS)

    def _poll(self):
        if self.job is not None:
            self.job.poll()

    def _stop_polling(self):
        if self._cb is not None and pn.state.curdoc is not None:
            try:
                pn.state.curdoc.remove_periodic_callback(self._cb)
            except ValueError:
                pass
        self._cb = None

    def _on_progress(self, event):
        self.bar.value = int(100 * event.new)

    def _on_status(self, event):
        running = event.new == "running"
        self.bar.visible = running
        self.stop.disabled = not running
        self.run.disabled = running
        self.download.disabled = not self.job.results
        if not running:
            self._stop_polling()
        text = {"running": N_("running the ladder…"), "done": N_("done"), "cancelled": self.job.message,
                "failed": f"failed: {self.job.message}", "idle": ""}[event.new]
        self._say(text, "#b00020" if event.new == "failed" else "#444")

    def _draw(self, event=None):
        results = self.job.results
        for key in ("kl", "m2"):
            for side in ("A", "B"):
                self.sources[(key, side)].data = dict(eps=[], y=[])
                if key == "kl":
                    self.sources[("noise", side)].data = dict(eps=[], y=[])
        for r in results:
            side = r.title.split(":")[0]
            eps = r.eps
            self.sources[("kl", side)].data = dict(eps=eps.tolist(), y=np.maximum(r.kl, 1e-12).tolist())
            self.sources[("m2", side)].data = dict(eps=eps.tolist(), y=np.maximum(r.m2_error, 1e-12).tolist())
            self.sources[("noise", side)].data = dict(eps=eps.tolist(), y=[p.kl_noise for p in r.points])
        if results:
            eps = results[0].eps
            top = {"kl": max(float(r.kl[0]) for r in results), "m2": max(float(r.m2_error[0]) for r in results)}
            for key in ("kl", "m2"):
                for slope in (1, 2):
                    self.sources[(key, f"slope{slope}")].data = dict(eps=eps.tolist(),
                                                                     y=_reference(eps, top[key], slope))
            legend = {r.title.split(":")[0]: r.title for r in results}
            for f in self.figs:
                for item in f.legend[0].items[:2]:
                    item.label = dict(value=legend.get(item.label["value"][:1], item.label["value"]))
        self.download.disabled = not results

    def close(self):
        self._stop_polling()
        if self.job is not None:
            self.job.cancel("the session ended")

    def __panel__(self):
        return self.body


class AutoEpsControl(Viewer):
    """eps = auto for one side: a toggle under the sampler's fields (pressed, the configuration holds eps = auto, as
    a link does; typing auto in the eps field does the same), the ladder's progress in words while it measures
    (one pane: each model is a cost at every page open), and what it chose and why."""

    lang = param.Selector(objects=list(LANGS), default=DEFAULT_LANG)

    def __init__(self, lab: Lab, side: str = "A", **params):
        super().__init__(**params)
        self.lab, self.cfg, self.label = lab, lab.config, side
        self.key = "params" if side == "A" else "params_b"
        self.sampler_key = "sampler" if side == "A" else "sampler_b"
        # a toggle button, not a checkbox: Bokeh's checkbox is an input without a label (axe-core: label, critical)
        self.toggle = pn.widgets.Toggle(name=tr("auto ε: picked by the step-size ladder", self.lang),
                                        button_type="light", value=wants_auto(getattr(self.cfg, self.key)),
                                        margin=(4, 10),
                                        css_classes=[f"auto-eps-{side.lower()}"])
        self.status = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10), disable_math=True,
                                   css_classes=[f"auto-eps-status-{side.lower()}"])
        self._doc = pn.state.curdoc
        self._cb = None
        self.job = AutoEpsJob(lab, side)
        self.toggle.param.watch(self._on_toggle, "value")
        self.cfg.param.watch(self._follow, [self.key, self.sampler_key])
        self.job.param.watch(self._on_job, ["status", "progress"])
        lab.param.watch(lambda e: self._show(), "version")
        self.param.watch(self._words, "lang")
        self._follow()
        self._on_job()

    def _words(self, *_) -> None:
        self.toggle.name = tr("auto ε: picked by the step-size ladder", self.lang)
        self._show()

    def _on_toggle(self, event) -> None:
        params = dict(getattr(self.cfg, self.key))
        if event.new:
            params["eps"] = AUTO
        elif wants_auto(params):
            params.pop("eps")
        if params != getattr(self.cfg, self.key):
            setattr(self.cfg, self.key, params)

    def _follow(self, *_) -> None:
        name = getattr(self.cfg, self.sampler_key)
        self.toggle.visible = name in REGISTRY and "eps" in REGISTRY[name].defaults
        wanted = wants_auto(getattr(self.cfg, self.key))
        if self.toggle.value != wanted:
            self.toggle.value = wanted

    def _on_job(self, *_) -> None:
        running = self.job.status == "running"
        if running and self._cb is None and self._doc is not None and self._doc.session_context is not None:
            self._cb = self._doc.add_periodic_callback(self.job.poll, POLL_MS)
        elif not running and self._cb is not None:
            try:
                self._doc.remove_periodic_callback(self._cb)
            except ValueError:
                pass
            self._cb = None
        self._show()

    def _show(self) -> None:
        state = self.job.state
        job = self.job
        if state is None:
            text, color = "", "#444"
        elif state.found is not None:
            text, color = explain(state, self.lang), "#1b5e20" if state.found.passed else "#664d03"
        elif job.status == "running":
            text = tr("auto ε: measuring on the step-size ladder, rung {rung} of at most {n} ({percent} %); "
                      "meanwhile the run uses the fitted default ε = {eps}", self.lang, rung=job.rung,
                      n=len(AUTO_RUNGS), percent=f"{100 * job.progress:.0f}", eps=f"{state.default_eps:.3g}")
            color = "#444"
        elif job.status in ("failed", "cancelled"):
            text = tr("auto ε (sampler {label}) could not be measured: {why}; the run uses the fitted default ε = "
                      "{eps} (type a number for eps)", self.lang, label=self.label,
                      why=tr_message(job.message, self.lang), eps=f"{state.default_eps:.3g}")
            color = "#b00020"
        else:
            text, color = explain(state, self.lang), "#444"
        html_ = f"<div style='font-size:12px;color:{color}'>{html.escape(text)}</div>" if text else ""
        if self.status.object != html_:
            self.status.object = html_

    def close(self) -> None:
        self.job.cancel("the session ended")

    def __panel__(self):
        return pn.Column(self.toggle, self.status, sizing_mode="stretch_width")
