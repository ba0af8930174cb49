"""Plain Bokeh figures for one live run, and the per-frame updates of their data sources.

Static parts (the exact density image and contours, the exact marginal curves) are drawn
once per run; each frame only assigns or streams small ColumnDataSource columns: histogram
heights, the new points of a few highlighted paths, a capped subsample of the ensemble and
the metrics text. Bokeh's save tool gives the PNG export.

A frame's changes travel as one websocket message (see FrameLoop.one_message), and a frame touches few
sources: the highlighted chains' current positions are the first rows of the ensemble source
(drawn again, bigger, through a fixed index filter), and both marginals share one source. Arrays (the
ensemble, the histograms' heights) go as binary buffers, which the message writes with its other parts in one
go (bokeh_speedups); the paths' few new points as JSON lists.

What the browser redraws each frame is kept small: the renderers whose data change every frame sit
on the "overlay" level, so BokehJS repaints only that canvas layer and leaves the density image,
contours, axes, grid and title alone; legends show static stand-ins (see `add_legend`); the metrics
panel is a Panel HTML pane, whose update only replaces its inner HTML where a Bokeh Div re-renders
and lays itself out again (the figures are in docs/notes/app-frames.md).
"""
from __future__ import annotations

import html
import math

import numpy as np
import panel as pn
from bokeh.document.events import ColumnDataChangedEvent, ColumnsStreamedEvent
from bokeh.layouts import column
from bokeh.models import (
    AllIndices,
    BasicTicker,
    CDSView,
    ColumnDataSource,
    CustomJS,
    CustomJSTicker,
    Div,
    GlyphRenderer,
    Image,
    IndexFilter,
    Legend,
    LegendItem,
    Line,
    LinearAxis,
    LinearColorMapper,
    LinearScale,
    MultiLine,
    Quad,
    Range1d,
    Scatter,
    UnionRenderers,
)
from bokeh.palettes import Blues256
from bokeh.plotting import figure
from bokeh.plotting.contour import contour_data
from bokeh.transform import linear_cmap

from ..model.i18n import DEFAULT_LANG, N_, tr
from ..model.live_run import LiveRun

# no box zoom: it brings four models per figure (its overlay and handles), and the wheel zooms as well
TOOLS = "pan,wheel_zoom,reset,save"
# Okabe & Ito's colour-blind-safe palette (Color Universal Design, 2008): A blue, B vermilion, and the highlighted
# chains in its other hues. Colour is never the only difference: B's bars are hatched, its lines dashed, and
# every legend and heading names A or B with its marker (RUN_MARKS)
PATH_COLORS = ["#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
RUN_COLORS = {"A": "#0072B2", "B": "#D55E00"}
RUN_MARKS = {"A": "●", "B": "▲"}
RUN_HATCH = {"A": None, "B": "/"}
RUN_DASH = {"A": "solid", "B": "dashed"}
# plot text: Bokeh's sizes, and a projector's (presentation mode: ≥ 18 px at 1280 wide, as the headline grows)
TEXT_SIZES = {False: dict(title="11pt", ticks="11px", axis="13px", legend="8pt"),
              True: dict(title="22px", ticks="18px", axis="18px", legend="18px")}
DENSITY_PALETTE = list(reversed(Blues256))[:200]   # white at zero density, no near-black
PATH_ROLLOVER = 150
TRACE_ROLLOVER = 600
TRACE_AHEAD = 150   # steps of room ahead of the trace: its axis moves only when the trace reaches the end
MAIN_HEIGHT = 340
MARGINAL_HEIGHT = 190        # with its legend's row above the plot area (170 when the legend sat inside)
MARGINAL_HEIGHT_PRESENT = 250
LIVE = "overlay"   # the level of renderers whose data change every frame (see the module docstring)
# drawing the points is the costliest part of a frame in the browser: filled squares, no outline (an
# outline doubles the canvas work per point, and software rendering fills squares faster than circles)
ENSEMBLE_STYLE = dict(x="x", y="y", size=3, fill_color="#333333", fill_alpha=0.45, line_color=None, marker="square")
HIGHLIGHT_STYLE = dict(x="x", y="y", size=9, line_color="black")


def stand_in_source() -> ColumnDataSource:
    """The data of a view's legend stand-ins (see add_legend): one NaN row, one source for all of them."""
    return ColumnDataSource({c: [math.nan] for c in ("x", "y", "left", "right", "top", "bottom")})


def lighten(figs) -> None:
    """Fewer models for the same picture: each model of a page costs the server at the page's open and
    in every frame's message (docs/notes/page-open.md).
    * One ticker, one label policy, one tick formatter and one linear scale for the linear axes (and their
      grids) of all the figures given (a view's, both runs' when comparing): all stateless in BokehJS (its
      frame clones a plot's scale before setting its ranges; the formatter's precision search is local).
    * One AllIndices filter for the renderers' views and one selection policy for their sources: both are
      stateless in BokehJS, and Bokeh makes one per renderer and per source.
    (Renderers of one source sharing one view lost the legend's scatter markers: BokehJS keeps a view per
    renderer.)"""
    everything = AllIndices()
    union = UnionRenderers()
    for f in figs:
        for r in f.renderers:
            if isinstance(r, GlyphRenderer):
                if type(r.view.filter) is AllIndices:
                    r.view.filter = everything
                if isinstance(r.data_source, ColumnDataSource):
                    r.data_source.selection_policy = union
    scales = [(f, d) for f in figs for d in ("x_scale", "y_scale") if type(getattr(f, d)) is LinearScale]
    for f, d in scales:
        setattr(f, d, getattr(*scales[0]))
    axes = [a for f in figs for a in (*f.xaxis, *f.yaxis) if type(a) is LinearAxis]
    if not axes:
        return
    ticker, policy, formatter = axes[0].ticker, axes[0].major_label_policy, axes[0].formatter
    for f in figs:
        for grid in f.grid:
            if type(grid.ticker) is type(ticker):
                grid.ticker = ticker
    for a in axes:
        a.ticker, a.major_label_policy = ticker, policy
        if type(a.formatter) is type(formatter):
            a.formatter = formatter


def add_glyph(fig, glyph, source, level="glyph", **kw) -> GlyphRenderer:
    """A renderer of one glyph: Bokeh's plotting API makes three per renderer (the glyph and its nonselection
    and muted copies, which nothing here shows), each a model the page open builds and serialises."""
    r = GlyphRenderer(data_source=source, glyph=glyph, level=level, **kw)
    fig.renderers.append(r)
    return r


def new_figure(title, height, **kw):
    p = figure(title=title, height=height, sizing_mode="stretch_width", tools=TOOLS,
               toolbar_location="right", min_border_left=40, **kw)
    p.toolbar.logo = None
    p.title.text_font_size = "11pt"
    return p


# the toolbar's tooltips (Bokeh's English names when None)
TOOL_WORDS = {"PanTool": N_("Pan"), "WheelZoomTool": N_("Wheel Zoom"), "ResetTool": N_("Reset view"),
              "SaveTool": N_("Save as PNG"), "HoverTool": N_("Values under the pointer")}


def tool_words(figs, lang: str) -> None:
    """The figures' tool tips in the language."""
    for f in figs:
        for tool in f.toolbar.tools:
            words = TOOL_WORDS.get(type(tool).__name__)
            if words is not None:
                tool.description = None if lang == DEFAULT_LANG else tr(words, lang)


def text_size(figs, present: bool) -> None:
    """Titles, tick labels, axis labels and legends at the normal or the presentation sizes (TEXT_SIZES). With
    projector-sized text a histogram keeps its room: taller, fewer ticks (its legend is a row above the plot area
    at either size; inside, at 170 px, its 18 px text left 80 px of plot under a legend as tall)."""
    size = TEXT_SIZES[bool(present)]
    for f in figs:
        f.title.text_font_size = size["title"]
        for axis in (*f.xaxis, *f.yaxis):
            axis.major_label_text_font_size = size["ticks"]
            axis.axis_label_text_font_size = size["axis"]
            if isinstance(axis.ticker, BasicTicker):
                axis.ticker.desired_num_ticks = 4 if present else 6
        for legend in f.legend:
            legend.label_text_font_size = size["legend"]
            if legend in f.above:       # one row over the plot area at either size
                continue
            legend.orientation = "horizontal" if present else "vertical"
            legend.padding, legend.spacing = (4, 12) if present else (10, 3)
        if (f.name or "").startswith("marginal-"):
            f.height = MARGINAL_HEIGHT_PRESENT if present else MARGINAL_HEIGHT


def _density_sources(axes, dens):
    """The exact density's image, colour map and contour lines (None: no contours), as models two figures
    of one target can share."""
    xs, ys = axes
    img = np.asarray(dens, float).T            # Bokeh images are [y, x]
    image = Image(x=xs[0], y=ys[0], dw=xs[-1] - xs[0], dh=ys[-1] - ys[0], global_alpha=0.9,
                  color_mapper=LinearColorMapper(palette=DENSITY_PALETTE))
    contours = None
    if np.isfinite(img).all() and img.max() > 0:
        levels = img.max() * np.array([0.02, 0.1, 0.3, 0.6, 0.9])
        try:
            lines = contour_data(xs, ys, img, levels, want_fill=False).line_data
            # one multi-line (NaN breaks each level's pieces): Bokeh's contour renderer is 14 models, this 5
            contours = ColumnDataSource(dict(xs=list(lines.xs), ys=list(lines.ys)))
        except Exception:   # contourpy refuses degenerate grids; the image alone is enough
            pass
    return image, ColumnDataSource(dict(image=[img])), contours


def _density_image(p, sources):
    """The exact density as an image with a few contour lines (static)."""
    image, source, contours = sources
    add_glyph(p, image, source, "image")
    if contours is not None:
        add_glyph(p, MultiLine(line_color="#08306b", line_alpha=0.5, line_width=1), contours)


def browser_only(*ranges):
    """Auto ranges (DataRange1d) follow the data in the browser at every redraw, and by default send
    each new extent back: one more message to the server per frame that nothing there reads."""
    for r in ranges:
        r.syncable = False


def add_legend(fig, entries, location, click_hide=False, place="center"):
    """A legend of (label, live renderer, stand-in) entries, the stand-in drawn in the legend.

    BokehJS rebuilds a legend's DOM whenever a model reachable from its items changes, such as the
    data source of a live renderer, every frame; a stand-in is a renderer styled like the live one
    with a single NaN row (drawn in the legend, nowhere on the plot; None: the renderer is static and
    shows itself). A click on an entry hides its stand-in and, through a callback on the legend (not
    on the items, so it adds nothing they reach), the live renderer with it. `place="above"`: one row over the
    plot area, where it hides no data (inside, a histogram's legend covered its right-hand peak)."""
    items = [LegendItem(label=label, renderers=[stand_in or live]) for label, live, stand_in in entries]
    outside = dict(orientation="horizontal", margin=0, padding=0, spacing=12) if place == "above" else {}
    legend = Legend(items=items, location=location, label_text_font_size="8pt", background_fill_alpha=0.6,
                    click_policy="hide" if click_hide else "none", **outside)
    if click_hide:
        pairs = [(stand_in, live) for _, live, stand_in in entries if stand_in is not None]
        legend.js_on_event("legend_item_click", CustomJS(
            args=dict(stand_ins=[s for s, _ in pairs], lives=[lv for _, lv in pairs]),
            code="const i = stand_ins.indexOf(cb_obj.item.renderers[0]);"
                 "if (i >= 0) lives[i].visible = !lives[i].visible;"))
    fig.add_layout(legend, place)
    return legend


def phase_density(pot, r_range, M=1.0, n=151):
    """exp(-H) on the (θ, r) plane for H = U + r²/(2M), normalised."""
    (xs,), px = pot.grid(n)
    rs = np.linspace(r_range[0], r_range[1], n)
    pr = np.exp(-rs ** 2 / (2 * M)) / math.sqrt(2 * math.pi * M)
    return (xs, rs), np.outer(px, pr)


class RunPlots:
    """The figures of one run: main plot (2-D density or (θ, r) phase plane), trace for 1-D
    targets, marginal histograms over the exact marginals, and a metrics panel."""

    @staticmethod
    def structure(run: LiveRun, side, log_view: bool = False) -> tuple:
        """What the figures' shape depends on: runs with the same structure reuse the figures
        (BokehJS 3.9 keeps replaced models alive for the whole session, so replacing figures on
        every parameter change would grow the page's memory)."""
        return (run.label, run.pot.name, tuple(map(tuple, run.pot.box)), run.dim, run.has_momentum,
                len(run.path_chains), log_view,
                _r_box(side) if run.dim == 1 and run.has_momentum else None)

    def __init__(self, run: LiveRun, side, label: str, log_view: bool = False, present: bool = False,
                 shared: dict | None = None, trace: bool = True, phase: bool = True, lang: str = DEFAULT_LANG):
        """`shared`: the static models (the exact density, its marginals' curves, the legends' stand-ins) of
        the figures made before these in the same rebuild, by what they show: both runs on one target draw
        the same exact density from the same models (sent to the page once). `trace=False`: a trace under a
        phase plane is made by `add_trace` (it is empty until the run steps, and a sixth of a first screen's
        models: docs/notes/page-open.md). `phase=False`: so is the phase plane (a pair's: until the runs step both
        show the same start, same seed), a note holding its place."""
        self.label, self.log_view, self.lang = label, log_view, lang
        self._run_label = run.label
        self._texts = []      # (model, attribute, English, fields): relabel() words them again
        self._shared = {} if shared is None else shared
        self.key = self.structure(run, side, log_view)
        self.color = RUN_COLORS.get(run.label, "#1f77b4")
        pot = run.pot
        self.dim = pot.dim
        # simplex targets are shown as omega = theta / sum(theta), the probabilities (see LiveRun)
        self.var = "ω" if getattr(pot, "theta_view", None) is not None else "θ"
        self.has_momentum = run.has_momentum
        K = len(run.path_chains)
        self.K = K
        self.side = side
        self.title = f"{label}: {side.title_in(lang)}"
        # recent tails of the highlighted chains: short on the main plot, longer on the 1-D trace (long
        # anti-aliased polylines are what costs most to draw in the browser)
        second = "y" if self.dim >= 2 else "r"
        self.paths = ColumnDataSource({f"{c}{k}": [] for k in range(K) for c in ("x", second)})
        self.trace_paths = ColumnDataSource({"t": [], **{f"x{k}": [] for k in range(K)}})
        self._path_sources = [(self.paths, PATH_ROLLOVER)] if self.dim >= 2 or self.has_momentum else []
        if self.dim == 1:
            self._path_sources.append((self.trace_paths, TRACE_ROLLOVER))
        # a path row's columns (t, then per chain its coordinates: see LiveRun.take_path_points) by the name each
        # has in the sources (None: not drawn), and which range bounds it (0 none, 1 θ₁'s, 2 θ₂'s or r's)
        per_chain = [("x", 1), ("y", 2)] if self.dim >= 2 else [("x", 1), ("r", 2)] if self.has_momentum else [("x", 1)]
        per_chain += [(None, 0)] * (run.path_width - len(per_chain))      # r beside θ₁, θ₂
        layout = [("t", 0)] + [(None if c is None else f"{c}{k}", b) for k in range(K) for c, b in per_chain]
        self._row_names = [name for name, _ in layout]
        self._row_bounds = np.array([b for _, b in layout])
        self._bounds_at = None
        n_pts = min(run.chains, run.max_points)
        self.ens = ColumnDataSource(dict(x=np.full(n_pts, np.nan), y=np.full(n_pts, np.nan),
                                         hid=np.arange(n_pts, dtype=float)), name=f"ens-{run.label}")
        self.figures = []
        self.blank = self._static(("blank",), stand_in_source)

        self.main = None
        if self.dim >= 2:
            v = self.var
            self.main = new_figure(f"{self.title} — {v}₁, {v}₂", MAIN_HEIGHT, x_range=Range1d(*pot.box[0]),
                             y_range=Range1d(*pot.box[1]), x_axis_label=f"{v}₁", y_axis_label=f"{v}₂")
            self._say(self.main.title, "text", N_("{title} — {v}₁, {v}₂"), v=v)
            if self.dim == 2:
                _density_image(self.main, self._static(("density", pot.name, _box(pot)),
                                                       lambda: _density_sources(*pot.grid(151))))
            for k in range(K):
                add_glyph(self.main, Line(x=f"x{k}", y=f"y{k}", line_color=PATH_COLORS[k % 6], line_width=1.5,
                                      line_alpha=0.9), self.paths, LIVE)
        self._phase, self.phase_note = None, None
        if self.has_momentum and self.dim == 1:
            M = float(side.sampler.params.get("M", 1.0) or 1.0)
            rbox = _r_box(side)
            # the phase plane's ranges, made now: its paths are masked to them before it is drawn (see _ranges)
            self._phase = (pot, M, rbox, Range1d(*pot.box[0]), Range1d(*rbox))
            if phase:
                self._make_phase()
            else:
                self.phase_note = Div(text="", css_classes=["phase-later"], styles={"font-size": "12px",
                                                                                      "color": "#555"})
                self._say(self.phase_note, "text", N_("{label}'s phase plane (θ, r) and trace are drawn once the runs "
                                                      "step"), label=label)
        if self.main is not None and self.dim >= 2:
            self._finish_main()

        self.trace, self.column = None, None
        self._box0 = pot.box[0]
        if self.dim == 1 and (trace or (self.main is None and self._phase is None)):
            self._make_trace()

        self.marginals, self.log_hist = [], None
        n_marg = run.plot_dims if run.dim <= 2 else 2
        cols = {}
        for i in range(n_marg):
            cols.update({f"left{i}": run.edges[i][:-1], f"right{i}": run.edges[i][1:],
                         f"top{i}": np.zeros(len(run.edges[i]) - 1)})
        self.hist = ColumnDataSource(cols, name=f"hist-{run.label}")
        for i in range(n_marg):
            self._add_marginal(run, i)
        if run.log_marginal is not None:
            self._add_log_marginal(run)

        if self.dim == 1:
            # the histogram against the exact density first: on a first screen (a laptop at 150 %, a projector)
            # it is what tells a sampler's law, where the phase plane and the trace show how it moves
            self.figures = self.marginals + [f for f in self.figures if f not in self.marginals]
        if shared is None:
            lighten(self.figures)     # else by the caller, over every run's figures
        if present:
            text_size(self.figures, True)
        self._y_ends = [fig.y_range.end for fig in self.marginals]
        self._y_ranges = [fig.y_range for fig in self.marginals]
        self._top_keys = [f"top{i}" for i in range(n_marg)]       # the histograms' columns (not the log one's)
        self.metrics = pn.pane.HTML("", sizing_mode="stretch_width", disable_math=True, margin=(5, 10),
                                    styles={"font-size": "13px"})
        self.relabel(lang)
        self.reset(run)

    def _say(self, model, attr: str, text: str, **fields) -> None:
        """A text of the figures, kept in English (with its fields; {title} is the run's title) and shown in
        the language."""
        self._texts.append((model, attr, text, fields))

    def relabel(self, lang: str) -> None:
        """The figures' titles, axis labels and legends in the language (the data stay)."""
        self.lang = lang
        self.title = f"{self.label}: {self.side.title_in(lang)}"
        for model, attr, text, fields in self._texts:
            words = tr(text, lang, title=self.title, **fields).strip()
            setattr(model, attr, dict(value=words) if attr == "label" else words)
        tool_words(self.figures, lang)

    @property
    def shows_trace(self) -> bool:
        """A 1-D run shows its trace (under a phase plane, once the run steps)."""
        return self.dim == 1

    def _make_phase(self):
        """The (θ, r) phase plane of a 1-D run with momentum: exp(−H) under the ensemble and the highlighted
        chains."""
        pot, M, rbox, x_range, y_range = self._phase
        self.main = new_figure(f"{self.title} — phase plane (θ, r)", MAIN_HEIGHT, x_range=x_range, y_range=y_range,
                               x_axis_label="θ", y_axis_label="r")
        self._say(self.main.title, "text", N_("{title} — phase plane (θ, r)"))
        _density_image(self.main, self._static(("phase", pot.name, _box(pot), rbox, M),
                                               lambda: _density_sources(*phase_density(pot, rbox, M))))
        for k in range(self.K):
            add_glyph(self.main, Line(x=f"x{k}", y=f"r{k}", line_color=PATH_COLORS[k % 6], line_width=1.5),
                      self.paths, LIVE)
        self._finish_main()

    def _finish_main(self):
        self._add_ensemble(self.K)
        self.main.name = f"main-{self._run_label}"
        self.figures.append(self.main)

    @property
    def phase_missing(self) -> bool:
        """A phase plane still to be made (`phase=False`)."""
        return self._phase is not None and self.main is None

    def _make_trace(self):
        self.trace = new_figure(f"{self.title} — trace of θ" if self.main is None else "trace of θ",
                                MAIN_HEIGHT if self.main is None else 180, y_range=Range1d(*self._box0),
                                x_range=Range1d(0, TRACE_ROLLOVER + TRACE_AHEAD), x_axis_label="step",
                                y_axis_label="θ")
        self.trace.name = f"trace-{self._run_label}"
        self._say(self.trace.title, "text", N_("{title} — trace of θ") if self.main is None else N_("trace of θ"))
        self._say(self.trace.xaxis[0], "axis_label", N_("step"))
        for k in range(self.K):
            add_glyph(self.trace, Line(x="t", y=f"x{k}", line_color=PATH_COLORS[k % 6], line_width=1.2),
                      self.trace_paths, LIVE)
        self.figures.append(self.trace)
        self._scroll_trace(self.trace_paths.data["t"][-1] if len(self.trace_paths.data["t"]) else 0)

    def add_trace(self, present: bool = False) -> bool:
        """The phase plane if it waits (`phase=False`) and the trace under it, added to the figures on the page
        (outside a frame: their models must reach the page before a frame streams into them). False: there was
        nothing to add."""
        new = []
        if self.phase_missing:
            self._make_phase()
            new.append(self.main)
        if self.trace is None and self.shows_trace:
            self._make_trace()
            new.append(self.trace)
        if not new:
            return False
        self.relabel(self.lang)
        lighten(new)
        text_size(new, present)
        if self.column is not None:
            kept = [c for c in self.column.children if c is not self.phase_note]
            self.column.children = [*kept, *new]
            self.phase_note = None
        return True

    def _static(self, key, make):
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]

    def _add_ensemble(self, K):
        """The ensemble's points and, on top, the highlighted chains: the first K rows of the same source."""
        main = self.main
        ens = add_glyph(main, Scatter(**ENSEMBLE_STYLE), self.ens, LIVE)
        colors = linear_cmap("hid", PATH_COLORS[:K], -0.5, K - 0.5)
        highlighted = add_glyph(main, Scatter(fill_color=colors, **HIGHLIGHT_STYLE), self.ens, LIVE,
                            view=CDSView(filter=IndexFilter(list(range(K)))))
        legend = add_legend(main, [("ensemble", ens, add_glyph(main, Scatter(**ENSEMBLE_STYLE), self.blank)),
                                   ("highlighted chains", highlighted,
                                    add_glyph(main, Scatter(fill_color=PATH_COLORS[0], **HIGHLIGHT_STYLE),
                                              self.blank))],
                            "top_right", click_hide=True, place="above")
        self._say(legend.items[0], "label", N_("ensemble"))
        self._say(legend.items[1], "label", N_("highlighted chains"))

    def _add_marginal(self, run, i):
        pot = run.pot
        edges = run.edges[i]
        coord = self.var if self.dim == 1 else f"{self.var}{'₁₂'[i]}"
        # fixed ranges: a DataRange1d would send its recomputed end back to the server every frame
        xs = np.linspace(edges[0], edges[-1], 400)
        marg = pot.marginals.get(i)
        ys = np.asarray(marg(xs), float) if marg is not None else np.zeros_like(xs)
        exact = (None if marg is None else
                 self._static(("marginal", pot.name, _box(pot), i, edges[0], edges[-1]),
                              lambda: ColumnDataSource(dict(x=xs, y=ys))))
        peak = float(np.nanmax(ys)) if np.isfinite(ys).any() and np.nanmax(ys) > 0 else 1.0
        p = new_figure(f"marginal of {coord}: samples vs exact", MARGINAL_HEIGHT, x_range=Range1d(edges[0], edges[-1]),
                 y_range=Range1d(0, 1.25 * peak), x_axis_label=coord, y_axis_label="density")
        self._say(p.title, "text", N_("marginal of {coord}: samples vs exact"), coord=coord)
        self._say(p.yaxis[0], "axis_label", N_("density"))
        self._add_histogram(p, dict(left=f"left{i}", right=f"right{i}", top=f"top{i}", source=self.hist),
                            exact, "top_right")
        p.name, p.css_classes = f"marginal-{self.label}-{i}", [f"marginal-{self.label.lower()}"]
        self.marginals.append(p)
        self.figures.append(p)

    def _add_log_marginal(self, run):
        lm = run.log_marginal
        k = lm["index"] + 1
        edges = lm["edges"]
        p = new_figure(f"log₁₀ of a small component, {self.var}{k}: samples vs exact", MARGINAL_HEIGHT,
                 x_range=Range1d(edges[0], edges[-1]), y_range=Range1d(0, 1.25 * max(float(np.max(lm["exact"])), 1e-9)),
                 x_axis_label=f"log₁₀ {self.var}{k}",
                 y_axis_label=f"density of log₁₀ {self.var}")
        self._say(p.title, "text", N_("log₁₀ of a small component, {v}{k}: samples vs exact"), v=self.var, k=k)
        self._say(p.yaxis[0], "axis_label", N_("density of log₁₀ {v}"), v=self.var)
        src = ColumnDataSource(dict(left=edges[:-1], right=edges[1:], top=np.zeros(len(edges) - 1)),
                               name=f"hist-{run.label}-log")
        self._add_histogram(p, dict(left="left", right="right", top="top", source=src),
                            ColumnDataSource(dict(x=lm["x"], y=lm["exact"])), "top_left")
        self.log_hist = src
        self.marginals.append(p)
        self.figures.append(p)

    def _add_histogram(self, fig, columns, exact, location):
        """Bars of the samples' histogram and, over them, the exact curve (a source of x, y) if known; both live
        (on the overlay level) so that the curve stays on top of the bars."""
        style = dict(fill_color=self.color, fill_alpha=0.45, line_color=self.color, line_alpha=0.6,
                     hatch_pattern=RUN_HATCH.get(self.label), hatch_color=self.color, hatch_alpha=0.8)
        source = columns.pop("source")
        bars = add_glyph(fig, Quad(bottom=0, **columns, **style), source, LIVE)
        entries = [(f"{RUN_MARKS.get(self.label, '')} {self.label} samples".strip(), bars,
                    add_glyph(fig, Quad(**style), self.blank))]
        if exact is not None:
            line = Line(line_color="black", line_width=2)
            entries.append(("exact", add_glyph(fig, line, exact, LIVE), None))
        legend = add_legend(fig, entries, location, place="above")
        self._say(legend.items[0], "label", N_("{mark} {label} samples"), mark=RUN_MARKS.get(self.label, ""),
                  label=self.label)
        if exact is not None:
            self._say(legend.items[1], "label", N_("exact"))

    def rebind(self, run: LiveRun, side) -> None:
        """Show a new run of the same structure: new titles, emptied sources, ranges as first drawn."""
        for fig, end in zip(self.marginals, self._y_ends):
            fig.y_range.end = end
        self.side = side
        self.relabel(self.lang)
        self.reset(run)

    # -- layout ---------------------------------------------------------------------
    def layout(self):
        # styles on the column itself: Panel's FlexBox lays out this column, not a wrapper
        note = [self.phase_note] if self.phase_note is not None else []
        self.column = column(*self.figures, *note, sizing_mode="stretch_width")
        return pn.Column(pn.pane.Bokeh(self.column, sizing_mode="stretch_width"),
                         self.metrics, sizing_mode="stretch_width", styles={"flex": "1 1 400px", "min-width": "0"})

    def show_metrics(self, m: dict) -> None:
        show_html(self.metrics, metrics_html(m, self.label, self.color, self.title, self.lang))

    # -- data -------------------------------------------------------------------------
    def reset(self, run: LiveRun):
        for src, _ in self._path_sources:
            src.data = {c: [] for c in src.column_names}
        if self.trace is not None:
            self.trace.x_range.update(start=0, end=TRACE_ROLLOVER + TRACE_AHEAD)
        self.update(run)

    def update(self, run: LiveRun, metrics_extra: dict | None = None, text: bool = True, score: bool = True) -> dict:
        """Push this frame's aggregates into the sources; returns the metrics shown.

        text=False leaves the metrics panel as it is: the frame loop refreshes the numbers a few times
        a second, which is as fast as they can be read (and each refresh costs the browser ~8 ms).
        score=False (only with text=False) skips computing them (KL, TV, ESS): nothing reads them this frame."""
        bounds = self._bounds()
        rows = run.take_path_points()
        if len(rows):
            cols = self._path_columns(rows, bounds)
            for src, rollover in self._path_sources:
                stream_columns(src, {c: cols[c] for c in _value(src, "data")}, rollover)
            if self.trace is not None:
                self._scroll_trace(rows[-1, 0])
        if self.main is not None:
            # float32 halves the largest part of a frame's message; the screen needs no more precision
            xy = run.ensemble_xy()
            lo, hi = bounds[:2]
            if xy.dtype != lo.dtype:       # compared in the points' precision, as with a scalar bound
                lo, hi = lo.astype(xy.dtype), hi.astype(xy.dtype)
            bad = xy < lo
            bad |= xy > hi
            xy = xy.astype(np.float32)
            np.copyto(xy, np.nan, where=bad)
            pts = {"x": xy[0], "y": xy[1]}
            if xy.shape[1] != len(_value(self.ens, "data")["hid"]):
                # another number of chains: every column at once, or BokehJS sees columns of two lengths
                self.ens.data = {**pts, "hid": np.arange(xy.shape[1], dtype=float)}
            else:
                set_columns(self.ens, pts)
        dens, _, _ = run.histograms()
        # arrays go as binary buffers, written with the message's other parts in one go (bokeh_speedups); a list
        # costs the serialiser a Python call per bin
        set_columns(self.hist, {key: d.astype(np.float32) for key, d in zip(self._top_keys, dens)})
        if self.log_hist is not None:
            set_columns(self.log_hist, {"top": dens[-1].astype(np.float32)})
        for y_range, d, end in zip(self._y_ranges, dens, self._y_ends):
            # grow a marginal's range when a histogram outgrows it (the ensemble before burn-in, gathered near its
            # start), and back once the accumulated histogram fits in half of it (else the bars kept half the plot)
            top = float(d.max()) if len(d) else 0.0
            if not math.isfinite(top):
                continue
            shown = _value(y_range, "end")
            if top > shown:
                y_range.end = 1.15 * top
            elif 2 * top < shown and shown > end and run.accumulating:
                y_range.end = max(end, 1.15 * top)
        if not (score or text):
            return self.last_metrics
        m = run.metrics()
        if metrics_extra:
            m.update(metrics_extra)
        self.last_metrics = m
        if text:
            self.show_metrics(m)
        return m

    def _scroll_trace(self, t):
        """Move the trace's window on only when its newest step runs past the end. A moving axis makes
        BokehJS redraw the whole figure, where new points alone redraw only the lines' layer."""
        xr = self.trace.x_range
        if t > xr.end:
            xr.update(start=t - TRACE_ROLLOVER, end=t + TRACE_AHEAD)

    def _path_columns(self, rows, bounds):
        """The path rows' columns by name (see _row_names), each coordinate outside its range (`_bounds`) as NaN."""
        lo, hi = bounds[2:]
        bad = rows < lo
        bad |= rows > hi
        if bad.any():
            rows = np.where(bad, np.nan, rows)
        return {name: col for name, col in zip(self._row_names, rows.T.tolist()) if name is not None}

    def _bounds(self) -> tuple:
        """The ranges' (see _ranges) lower and upper bounds as columns of an ensemble's (2, points) array, and as a
        path row's (see _row_bounds); made again only when a range moves (the user pans or zooms)."""
        key = [_value(r, name) for r in self._ranges() for name in ("start", "end")]
        if key != self._bounds_at:
            pairs = [sorted(key[i:i + 2]) for i in range(0, len(key), 2)]
            coords = np.array(pairs, float)
            rows = np.array([(-np.inf, np.inf), *pairs])[self._row_bounds]
            self._bounds_at, self._bounds_now = key, (coords[:, :1], coords[:, 1:], rows[:, 0], rows[:, 1])
        return self._bounds_now

    def _ranges(self) -> tuple:
        """The ranges points are kept in, θ₁'s and the second coordinate's: outside, a coordinate goes as NaN (a
        break in a line, a point not drawn). The live layer is
        BokehJS's overlay level, which is not clipped to the plot frame: a point outside would be drawn over the
        axes and title. θ₁ also feeds the 1-D trace, whose θ range is the same box as the main plot's."""
        if self.main is None and self._phase is not None:       # a phase plane not drawn yet: its ranges
            return self._phase[3], self._phase[4]
        if self.main is None:
            return (self.trace.y_range,)
        return self.main.x_range, self.main.y_range



def _value(model, name: str):
    """`getattr(model, name)` without the property's descriptor where the value is set. (A value never set costs the
    descriptor tens of µs; a Range1d keeps no start or end equal to its default, 0 or 1.)"""
    values = model._property_values
    return values[name] if name in values else getattr(model, name)


# A frame's changes of its sources, as Bokeh's `source.data.update(cols)` and `source.stream(new, rollover)` make
# them (the same data kept here, the same events sent), without what Bokeh does around each: a copy of every column
# of the source and a validation of all its data, at each change. The columns a frame sets are its own arrays and
# lists, of the sources' lengths; together that was a tenth of a frame's server CPU.
# The event then goes to the document as Bokeh's `Model.trigger` hands it on (`notify_change`), without the walk
# through the model's and the callback manager's triggers, which only add an invoker of the source's Python
# callbacks on "data" (none here: with one, Bokeh's way). Held to be combined (a frame's hold), it is appended: Bokeh
# would offer it to each held event first, and its events combine only with their own kinds (a property's new value,
# a title), never with a change of columns.
def set_columns(source: ColumnDataSource, cols: dict) -> None:
    data = _value(source, "data")
    dict.update(data, cols)
    _changed(source, data, ColumnDataChangedEvent(source.document, source, "data", cols=list(cols)))


def stream_columns(source: ColumnDataSource, new: dict, rollover: int) -> None:
    data = _value(source, "data")
    for name, values in new.items():
        column = dict.__getitem__(data, name)      # lists (the sources start with empty lists)
        column.extend(values)
        if len(column) > rollover:
            del column[:len(column) - rollover]
    _changed(source, data, ColumnsStreamedEvent(source.document, source, "data", new, rollover))


def _changed(source: ColumnDataSource, data, event) -> None:
    doc = event.document
    if doc is None or source._callbacks.get("data"):
        source.trigger("data", data, data, hint=event)
        return
    callbacks = doc.callbacks
    if callbacks._hold == "combine":
        callbacks._held_events.append(event)
    else:
        callbacks.trigger_on_change(event)


def show_html(pane: pn.pane.HTML, text: str) -> None:
    """`pane.object = text` for the panes a playing run rewrites a few times a second (its numbers, the A/B summary,
    the plots' text alternative): the pane's value and its Bokeh models' text as Panel's own update leaves them
    (bokeh_speedups.html_update), without param's setter and watchers around that update, which cost the server
    more than the update itself. A pane of another kind, or a param without the value store read here, goes
    through Panel."""
    if pane.object == text:
        return
    values = getattr(getattr(pane, "_param__private", None), "values", None)
    if type(pane) is not pn.pane.HTML or pane.enable_streaming or "object" not in (values or {}):
        pane.object = text
        return
    values["object"] = text
    props = pane._process_param_change({"object": text})
    for model, _ in pane._models.values():
        model.update(**props)


def _box(pot) -> tuple:
    return tuple(map(tuple, np.asarray(pot.box, float).tolist()))


def _r_box(side) -> tuple:
    """The momentum range of the phase plane: the recipe's own, else 4 standard deviations."""
    if side.recipe is not None and side.recipe.aux_box:
        return tuple(float(v) for v in side.recipe.aux_box[0])
    M = float(side.sampler.params.get("M", 1.0) or 1.0)
    return (-4.0 * math.sqrt(M), 4.0 * math.sqrt(M))


def fmt(v, digits=3):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "–"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
        return f"{v:.{digits - 1}e}"
    return f"{v:.{digits}g}" if abs(v) < 1 else f"{v:,.{max(digits - 1, 0)}f}" if abs(v) < 100 else f"{v:,.0f}"


def metrics_html(m: dict, label: str, color: str, title: str, lang: str = DEFAULT_LANG) -> str:
    """A small table; each value carries data-metric="<name>-<run>" so tests can read it."""
    src = (tr("samples since step {burn}", lang, burn=m['burn']) if m.get("accumulating")
           else tr("ensemble now (accumulates after step {burn})", lang, burn=m['burn']))
    rows = [(tr("step", lang), "t", fmt(m["t"])),
            (tr("KL to exact", lang), "kl", fmt(m["kl"])),
            (tr("TV to exact", lang), "tv", fmt(m["tv"])),
            ("ESS (θ₁)", "ess", fmt(m["ess"])),
            (tr("diverged chains", lang), "diverged", f"{m['diverged']:,} / {m['chains']:,}")]
    if m.get("escaped") is not None:
        rows.append((tr("escaped chains", lang), "escaped", f"{m['escaped']:,} / {m['chains']:,}"))
    if m.get("outside"):
        rows.append((tr("outside the box", lang), "outside", f"{100 * m['outside']:.2g} %"))
    if "xi" in m:
        rows.append((tr("ξ (mean)", lang), "xi", fmt(m["xi"])))
    if "temperature" in m:
        rows.append((tr("kinetic temperature", lang), "temperature", fmt(m["temperature"])))
    if "acceptance" in m:
        rows.append((tr("acceptance rate", lang), "acceptance", fmt(m["acceptance"])))
    if m.get("residual_text"):
        rows.append((tr("FP residual", lang), "residual", m["residual_text"]))
    cells = "".join(
        f"<tr><td style='padding:1px 10px 1px 0;color:#555'>{html.escape(n)}</td>"
        f"<td data-metric='{key}-{label.lower()}' style='font-family:monospace;text-align:right'>"
        f"{html.escape(v)}</td></tr>"
        for n, key, v in rows)
    style = "color:#b00020;font-weight:600" if m["diverged"] or m.get("escaped") else "color:#555"
    return (f"<div style='border-left:4px solid {color};padding-left:8px'>"
            f"<div style='font-weight:600'>{html.escape(title)}</div>"
            f"<table style='border-collapse:collapse'>{cells}</table>"
            f"<div style='font-size:11px;{style}'>{html.escape(tr('histogram: {src}', lang, src=src))}</div></div>")


# Bokeh's LogTicker falls back to linear ticks when the range spans less than two decades, which on a log
# axis piles them up at the top; these are 1, 2, 5 (or 1..9) times powers of ten, spread on the log scale.
LOG_TICKS_JS = """
const lo = Math.max(Math.min(cb_data.start, cb_data.end), 1e-300), hi = Math.max(cb_data.start, cb_data.end);
const decades = Math.log10(hi) - Math.log10(lo);
if (decades < 0.5) {   // nearly linear here: round steps of 1, 2 or 5, at most six of them
  let step = Math.pow(10, Math.floor(Math.log10((hi - lo) / 5)));
  for (const m of [1, 2, 5, 10]) if ((hi - lo) / (m * step) <= 6) { step *= m; break; }
  const out = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi * (1 + 1e-9); t += step) out.push(Number(t.toPrecision(12)));
  return out;
}
const ticks = (mantissas, every) => {
  const out = [];
  for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) {
    if (((k % every) + every) % every) continue;
    for (const m of mantissas) {
      const t = m * Math.pow(10, k);
      if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) out.push(t);
    }
  }
  return out;
};
if (decades > 6) return ticks([1], Math.ceil(decades / 6));
for (const mantissas of [[1], [1, 3], [1, 2, 5]]) {
  const t = ticks(mantissas, 1);
  if (t.length >= 3) return t;
}
return ticks([1, 2, 3, 4, 5, 6, 7, 8, 9], 1);
"""


class KLHistory:
    """KL of each run against the step, log scale: where naive and corrected part ways."""

    def __init__(self, runs, labels, lang: str = DEFAULT_LANG):
        # fixed ranges set from the data streamed (an auto range over no data yet, or over the legend's NaN
        # stand-ins, has Bokeh warn "could not set initial ranges" and "could not determine minimum data value
        # for log axis" in the console at every redraw)
        self.fig = new_figure("KL to the exact density (log scale)", 220, y_axis_type="log", x_axis_label="step",
                              y_axis_label="KL", x_range=Range1d(0, 1), y_range=Range1d(1e-3, 1))
        self.fig.name = "kl-history"
        self.fig.yaxis.ticker = CustomJSTicker(major_code=LOG_TICKS_JS)
        self.sources, entries = [], []
        self._n = -1                      # frames seen by update
        blank = stand_in_source()
        for run, label in zip(runs, labels):
            src = ColumnDataSource(dict(t=[], kl=[]), name=f"kl-{run.label}")
            style = dict(line_color=RUN_COLORS.get(run.label, "#1f77b4"), line_width=2,
                         line_dash=RUN_DASH.get(run.label, "solid"))
            entries.append((label, add_glyph(self.fig, Line(x="t", y="kl", **style), src),
                            add_glyph(self.fig, Line(**style), blank)))
            self.sources.append(src)
        self.legend = add_legend(self.fig, entries, "top_right", place="above")
        lighten([self.fig])
        self.relabel(lang)
        self.reset(labels)

    def relabel(self, lang: str, labels=None) -> None:
        self.fig.title.text = tr("KL to the exact density (log scale)", lang)
        self.fig.xaxis[0].axis_label = tr("step", lang)
        tool_words([self.fig], lang)
        for item, label in zip(self.legend.items, labels or []):
            item.label = dict(value=label)

    def reset(self, labels):
        for src, item, label in zip(self.sources, self.legend.items, labels):
            src.data = dict(t=[], kl=[])
            item.label = dict(value=label)
        self._pending = [[] for _ in self.sources]
        self.fig.x_range.update(start=0, end=1)
        self.fig.y_range.update(start=1e-3, end=1)

    EVERY = 5        # frames between points: the curve needs no more
    PUSH_EVERY = 2   # points sent together: each push redraws the whole figure, as its ranges follow the data

    def due(self) -> bool:
        """Whether the next update reads the metrics (every EVERY-th frame)."""
        return (self._n + 1) % self.EVERY == 0

    def update(self, metrics_list, force: bool = False):
        self._n += 1
        if self._n % self.EVERY and not force:
            return
        for pending, m in zip(self._pending, metrics_list):
            kl = m.get("kl")
            if kl is not None and np.isfinite(kl) and kl > 0 and m.get("accumulating"):
                pending.append((m["t"], kl))
        if force or self._n % (self.EVERY * self.PUSH_EVERY) == 0:
            for src, pending in zip(self.sources, self._pending):
                if pending:
                    t, kl = zip(*pending)
                    stream_columns(src, dict(t=list(t), kl=list(kl)), 2000)
                    pending.clear()
            self._fit()

    def _fit(self) -> None:
        """The ranges around the data shown (a log range in whole powers of ten: it moves seldom)."""
        ts = [float(v) for src in self.sources for v in (*src.data["t"][:1], *src.data["t"][-1:])]
        kls = [src.data["kl"] for src in self.sources if len(src.data["kl"])]      # up to 2000 points each
        if not ts or not kls:
            return
        lo, hi = min(ts), max(ts)
        _set_range(self.fig.x_range, lo, hi if hi > lo else lo + 1)
        _set_range(self.fig.y_range, 10.0 ** math.floor(math.log10(float(min(map(min, kls))))),
                   10.0 ** math.ceil(math.log10(float(max(map(max, kls)))) + 1e-9))


def _set_range(r, start, end) -> None:
    """A range's start and end where they change (Bokeh validates every value set, and sends only changes)."""
    if _value(r, "start") != start:
        r.start = start
    if _value(r, "end") != end:
        r.end = end
