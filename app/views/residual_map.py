"""Where the dynamics break stationarity: d_t p at p = exp(-H) as a heat map, the probability current as
streamlines, for sampler A's recipe as it runs (edited D and Q, naive switch). A recipe's map is zero
everywhere and its current only circulates; a naive one shows where mass is created (red) and destroyed
(blue)."""
from __future__ import annotations

import html

import numpy as np
import panel as pn
import param
from bokeh.models import ColorBar, ColumnDataSource, LinearColorMapper
from bokeh.palettes import RdBu11
from panel.viewable import Viewer
from scipy.interpolate import RegularGridInterpolator

from samplers.engine.stationarity import map_planes, residual_map

from ..model.i18n import DEFAULT_LANG, LANGS, N_, tr, tr_message
from ..model.lab import RESIDUAL_OK, Lab
from ..model.runner import Failure
from .plots import new_figure, tool_words

GRID = 61
PALETTE = list(RdBu11)       # Bokeh's RdBu runs blue to red: blue, mass destroyed; white, zero; red, created
PRETTY = {"theta": "θ", "theta_1": "θ₁", "theta_2": "θ₂", "r_1": "r₁", "r_2": "r₂", "xi": "ξ"}


def streamlines(axes, jx, jy, seeds: int = 14, steps: int = 40) -> tuple[list, list]:
    """Lines along the current, traced from a lattice of seeds all at once (midpoint steps of a fixed
    length along the unit direction, so that slow and fast regions get lines of the same length)."""
    x, y = axes
    fx = RegularGridInterpolator((x, y), jx, bounds_error=False, fill_value=np.nan)
    fy = RegularGridInterpolator((x, y), jy, bounds_error=False, fill_value=np.nan)
    speed = np.hypot(jx, jy)
    floor = 1e-3 * speed.max() if speed.max() > 0 else np.inf
    h = 0.35 * min(x[1] - x[0], y[1] - y[0]) * (len(x) / seeds) / 4
    sx, sy = np.meshgrid(np.linspace(x[0], x[-1], seeds + 2)[1:-1], np.linspace(y[0], y[-1], seeds + 2)[1:-1])
    pos = np.stack([sx.ravel(), sy.ravel()], axis=1)
    path = [pos]

    def direction(q):
        v = np.stack([fx(q), fy(q)], axis=1)
        n = np.hypot(v[:, 0], v[:, 1])
        v = v / np.where(n > floor, n, np.nan)[:, None]
        return v

    for _ in range(steps):
        mid = pos + 0.5 * h * direction(pos)
        pos = pos + h * direction(mid)
        path.append(pos)
    path = np.stack(path, axis=1)          # (seeds², steps + 1, 2)
    xs, ys = [], []
    for line in path:
        ok = np.isfinite(line).all(axis=1)
        n = int(np.argmin(ok)) if not ok.all() else len(ok)
        if n >= 3:
            xs.append(line[:n, 0].tolist())
            ys.append(line[:n, 1].tolist())
    return xs, ys


class ResidualMapView(Viewer):
    """The map for sampler A (or the side `pick` names), redrawn when the lab is rebuilt (an edit of D or Q,
    the naive switch)."""

    lang = param.Selector(objects=list(LANGS), default=DEFAULT_LANG)

    def __init__(self, lab: Lab, schedule=None, pick=None, **params):
        """`schedule(fn)` runs fn where it may touch Bokeh models (the lab's frame loop's `with_lock`);
        `pick(lab)` is the side to map (default: sampler A's)."""
        super().__init__(**params)
        self.lab = lab
        self.pick = pick or (lambda lab: lab.sides[0] if lab.sides else None)
        self.fig = new_figure(tr("∂ₜp at p = e^(−H)", self.lang), 300, x_axis_label="θ", y_axis_label="r")
        self.fig.name = "residual-map"
        self.mapper = LinearColorMapper(palette=PALETTE, low=-1, high=1)
        self.image = ColumnDataSource(dict(image=[np.zeros((2, 2))], x=[0], y=[0], dw=[1], dh=[1]),
                                      name="residual-field")
        self.fig.image(image="image", x="x", y="y", dw="dw", dh="dh", source=self.image, color_mapper=self.mapper)
        self.lines = ColumnDataSource(dict(xs=[], ys=[]), name="residual-current")
        self.fig.multi_line("xs", "ys", source=self.lines, line_color="#333", line_alpha=0.55, line_width=1)
        self.fig.add_layout(ColorBar(color_mapper=self.mapper, width=10, title="∂ₜp"), "right")
        tool_words([self.fig], self.lang)
        self.caption = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["residual-map-caption"],
                                    margin=(0, 10))
        self.pane = pn.pane.Bokeh(self.fig, sizing_mode="stretch_width")
        self.body = pn.Column(self.caption, self.pane, sizing_mode="stretch_width", css_classes=["residual-map"],
                              styles={"flex": "1 1 360px", "min-width": "0"})
        self._key = None
        self._caption = ("", {})       # the caption's English template and its fields (shown in the language)
        schedule = schedule or (lambda fn: fn())
        self.param.watch(lambda e: schedule(self._words), "lang")
        lab.param.watch(lambda e: schedule(self.redraw_residual_map), "version")
        self.redraw_residual_map()

    def redraw_residual_map(self) -> None:
        side = self.pick(self.lab)
        if side is None or side.recipe is None or self.lab.potential is None:
            self.pane.visible = False
            if self.lab.building:
                self._say("<i>{text}</i>", text=N_("building…"))
                return
            self._say("<i>{text}</i>",
                      text=N_("The residual map needs a recipe sampler on a target of dimension 1 or 2."))
            return
        key = (id(side.recipe), self.lab.potential.name)
        if key == self._key:
            return
        self._key = key
        pot = self.lab.potential
        # a map costs 0.1-1 s of numpy: on a worker, drawn when it arrives (unless the lab moved on)
        self.lab.offload(lambda: self._telling_plane(side, pot), lambda m: key == self._key and self._draw(side, m))

    def _draw(self, side, m) -> None:
        if isinstance(m, Failure):      # a user's D may be singular on the grid: say so, keep the page
            self.pane.visible = False
            self._say("<i>{text}</i>", text=N_("No residual map: {why}"), why=m.message)
            return
        self.pane.visible = True
        x, y = m.axes
        field = np.nan_to_num(m.field)
        if not len(y):                     # a one-variable state: a single row, drawn as a band
            y = np.array([-0.5, 0.5])
            field = np.repeat(field.reshape(-1, 1), 2, axis=1)
        top = float(np.abs(field).max())
        # the verdict is the whole state's (the badge's number), not this slice's
        ok = side.exact
        # a recipe's residual is round-off: a colour range of a tenth keeps its map white
        scale = top if not ok and top > 0 else 0.1
        self.mapper.update(low=-scale, high=scale)
        self.image.data = dict(image=[field.T], x=[x[0]], y=[y[0]], dw=[x[-1] - x[0]], dh=[y[-1] - y[0]])
        if len(m.current) == 2:
            xs, ys = streamlines((x, y), np.nan_to_num(m.current[0]), np.nan_to_num(m.current[1]))
        else:
            xs, ys = [], []
        self.lines.data = dict(xs=xs, ys=ys)
        self.fig.x_range.update(start=x[0], end=x[-1])
        self.fig.y_range.update(start=y[0], end=y[-1])
        self.fig.xaxis.axis_label = PRETTY.get(m.names[0], m.names[0])
        self.fig.yaxis.axis_label = PRETTY.get(m.names[1], m.names[1]) if len(m.names) > 1 else ""
        held = ", ".join(f"{k} = {v:g}" for k, v in m.fixed.items())
        self._say("verdict", ok=ok, relative=f"{m.relative:.1e}",
                  whole=f"{side.residual if side.residual is not None else float('nan'):.1e}", top=f"{top:.2g}",
                  empty=not xs, held=held)

    def _say(self, template: str, **fields) -> None:
        self._caption = (template, fields)
        self.caption.object = self._caption_html()

    def _words(self) -> None:
        self.fig.title.text = tr("∂ₜp at p = e^(−H)", self.lang)
        tool_words([self.fig], self.lang)
        self.caption.object = self._caption_html()

    def _caption_html(self) -> str:
        template, f = self._caption
        lang = self.lang
        if template != "verdict":
            text = tr(f.get("text", ""), lang, **({"why": tr_message(f["why"], lang)} if "why" in f else {}))
            return template.format(text=html.escape(text)) if text else ""
        verdict = ("<b style='color:#1b5e20' data-residual-map='ok'>" + tr(
            "✓ zero everywhere: e<sup>−H</sup> is stationary, the current only circulates", lang) + "</b>" if f["ok"]
            else "<b style='color:#b00020' data-residual-map='bad'>" + tr(
                "✗ mass is created (red) and destroyed (blue): e<sup>−H</sup> is not stationary", lang) + "</b>")
        detail = tr("relative residual {relative} on this plane ({whole} over the whole state), largest |∂ₜp| {top} "
                    "(p ≤ 1); lines: the probability current", lang, relative=f["relative"], whole=f["whole"],
                    top=f["top"])
        if f["empty"]:
            detail += tr(" (zero in this slice)", lang)
        if f["held"]:
            detail += html.escape(tr("; slice at {held}", lang, held=f["held"]))
        return f"<div style='font-size:13px'>{verdict}<br><span style='color:#444'>{detail}</span></div>"

    @staticmethod
    def _telling_plane(side, pot):
        """The first plane that shows a naive sampler's fault: on a slice (momentum at 0, say) a dropped
        term can vanish, and a white map beside a red badge would say the opposite of the truth."""
        first = None
        for plane in map_planes(side.recipe):
            with np.errstate(all="ignore"):
                m = residual_map(side.recipe, pot, GRID, plane)
            first = first or m
            if side.exact or m.relative >= RESIDUAL_OK:
                return m
        return first

    def __panel__(self):
        return self.body
