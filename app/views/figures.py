"""The Paper figures section: each reproduction under its paper, with its title, the claims it tests
and their verdicts, its figure with a caption, its table rounded for reading, and its files to download;
files no reproduction wrote follow under "Other files". `lang` is the language of its words (the claims and
titles through the catalogue, the runs' records, table cells and settings through their templates: see
app/model/figures.py); changing it redraws the section. The plot's column menu is labelled in the language and
keeps the CSV's column keys as its values."""
from __future__ import annotations

import html
import math
from pathlib import Path

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (registers the bokeh backend; hv.extension would write notebook output)
import panel as pn
import param
from panel.viewable import Viewer

from ..model.figures import (
    Catalogue,
    Figure,
    PlotTable,
    catalogue,
    cell_in,
    column_label,
    display_table,
    in_lang,
    plot_table,
    preview,
    record_in,
)
from ..model.i18n import DEFAULT_LANG, LANGS, tr

STYLE = """
:host { font-size: 14px; line-height: 1.45; }
h2 { font-size: 19px; margin: 22px 0 2px 0; padding-top: 10px; border-top: 2px solid #ddd; }
h3 { font-size: 16px; margin: 14px 0 4px 0; }
.paper-title { font-weight: 400; font-style: italic; }
.source { color: #555; font-size: 12.5px; }
.source code { font-size: 12px; background: #f3f3f3; padding: 0 3px; border-radius: 3px; }
ul.verdicts { list-style: none; padding-left: 0; margin: 6px 0; }
ul.verdicts li { margin: 4px 0; padding-left: 1.6em; text-indent: -1.6em; }
.mark { display: inline-block; width: 1.3em; text-indent: 0; text-align: center; font-weight: 700;
        border-radius: 3px; color: white; margin-right: 0.3em; }
.holds .mark { background: #1b5e20; }
.fails .mark { background: #b00020; }
.undecided .mark { background: #757575; }
.verdict-word { font-weight: 600; }
.evidence { color: #555; font-size: 12.5px; text-indent: 0; }
.note { color: #555; font-size: 12.5px; }
details { font-size: 12.5px; color: #444; margin: 4px 0; }
figcaption { color: #444; font-size: 12.5px; margin: 2px 0 8px 0; }
.table-wrap { overflow-x: auto; max-width: 100%; }
table.asset-table { border-collapse: collapse; font-size: 12.5px; font-variant-numeric: tabular-nums; }
table.asset-table th, table.asset-table td { border-bottom: 1px solid #e3e3e3; padding: 3px 8px; white-space: nowrap; }
table.asset-table th { text-align: left; background: #f6f6f6; font-weight: 600; }
table.asset-table td.num { text-align: right; }
"""
MAX_WIDTH = 980


def intro(lang: str = DEFAULT_LANG) -> str:
    return tr("<p>The sources' experiments, rerun by this project (<code>python -m samplers reproduce all</code>). "
              "Under each figure, the claims of the paper it tests: <b>✓</b> the claim holds in our run, <b>✗</b> it "
              "does not, <b>?</b> our numbers cannot decide it (the difference is within their Monte Carlo error; "
              "the interval that would decide it is given), each with the numbers behind the verdict. Tables are "
              "rounded to four significant digits; the CSV files hold every digit.</p>", lang)


def _record(lang: str, shown_in: str) -> str:
    """In another language, what evidence left in English is: the run's own record (one no template of
    app/locale/<lang>/figures-record.toml matches)."""
    return "" if shown_in == lang else tr("The run's record (in English): ", lang)


def _en(text: str, lang: str, shown_in: str = DEFAULT_LANG) -> str:
    """Escaped text the run wrote, marked as English where it is shown in English on a page in another
    language (a screen reader then reads it as English)."""
    return html.escape(text) if shown_in == lang else f"<span lang='en'>{html.escape(text)}</span>"


def _run_text(text: str, lang: str) -> str:
    """Escaped text a run wrote, in the language where its templates cover it, else in English marked so."""
    shown = record_in(text, lang)
    return _en(text, lang) if shown is None else html.escape(shown)


def _html(text: str, **kw) -> pn.pane.HTML:
    return pn.pane.HTML(text, sizing_mode="stretch_width", stylesheets=[STYLE], margin=kw.pop("margin", (0, 10)),
                        **kw)


def _is_number(text: str) -> bool:
    try:
        float(text.replace("×10", "e").translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")))
        return True
    except ValueError:
        return False


def table_html(path, lang: str = DEFAULT_LANG) -> str:
    header, rows, left_out = display_table(path, lang=lang)
    if not header:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td class='{'num' if _is_number(c) else 'text'}'>{html.escape(c)}</td>"
                                    for c in r) + "</tr>" for r in rows)
    more = (f"<div class='note'>{tr('{n} more rows in the CSV file.', lang, n=left_out)}</div>"
            if left_out else "")
    # a box that scrolls sideways takes the keyboard's focus, so that its arrow keys scroll it (axe-core:
    # scrollable-region-focusable)
    label = html.escape(tr("{name}: the table, rounded", lang, name=Path(path).stem), quote=True)
    return (f"<div class='table-wrap' tabindex='0' role='region' aria-label='{label}'><table class='asset-table'>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}")


def _downloads(paths, lang: str = DEFAULT_LANG) -> pn.FlexBox:
    label = {".csv": tr("Download table (CSV, full precision)", lang), ".png": tr("Download figure (PNG)", lang),
             ".svg": tr("Download figure (SVG)", lang)}
    # a FlexBox, not a Row: a Row is as wide as its buttons together, and widened the page on a phone
    return pn.FlexBox(*[pn.widgets.FileDownload(file=str(p), filename=p.name,
                                                label=label.get(p.suffix.lower(),
                                                                tr("Download {name}", lang, name=p.name)),
                                                css_classes=["figure-download"], width=230, margin=(4, 10))
                        for p in paths], flex_wrap="wrap", sizing_mode="stretch_width")


def _image(path, caption: str, alt: str = "", lang: str = DEFAULT_LANG) -> pn.Column:
    alt = alt or tr("{name}: the figure described below", lang, name=path.name)
    pane = (pn.pane.SVG(str(path), alt_text=alt) if path.suffix.lower() == ".svg"
            else pn.pane.Image(str(path), alt_text=alt))
    pane.param.update(sizing_mode="scale_width", max_width=900, styles={"max-width": "100%"}, margin=(4, 10))
    return pn.Column(pane, _html(f"<figcaption>{caption}</figcaption>"), sizing_mode="stretch_width")


def _dim(name: str, lang: str = DEFAULT_LANG) -> hv.Dimension:
    return hv.Dimension(name, label=column_label(name, lang))


def table_plot(table: PlotTable, metric: str, title: str = "", lang: str = DEFAULT_LANG) -> hv.Element:
    """One column of a reproduction's table as HoloViews draws it: a point per row (the row's label on the
    vertical axis) or, for a figure with an x column, a curve per group; hovering a point shows every number
    of its row. Rows without a value in the column are left out (a log axis cannot draw them)."""
    others = [c for c in table.numeric if c not in (metric, table.x)]
    rows = [i for i, v in enumerate(table.columns[metric]) if math.isfinite(v)
            and (table.x is None or math.isfinite(table.columns[table.x][i]))]
    pick = lambda col: [col[i] for i in rows]
    if table.x is None:
        rows.reverse()    # a dot plot on its side lists its first row at the bottom: this puts it on top
    data = {"row": pick(table.labels), **{c: pick(table.columns[c]) for c in table.columns}}
    vdims = [_dim(metric, lang)] + [_dim(c, lang) for c in others]
    log = table.log_scale(metric)
    # the value axis: x once a dot plot is turned on its side
    value_format = {} if log else {"xformatter" if table.x is None else "yformatter": "%.4g"}
    hover = dict(tools=["hover"], default_tools=["pan", "wheel_zoom", "box_zoom", "reset", "save"],
                 fontsize={"labels": "13px", "ticks": "12px", "title": "14px"}, title=title)
    if table.x is None:
        # a dot plot rather than bars: a bar on a log axis has no base to stand on
        height = max(160, 34 * len(rows) + 80)
        return hv.Scatter(data, kdims=[_dim("row", lang)], vdims=vdims).opts(
            invert_axes=True, size=10, color="#0072B2", logy=log, responsive=True, min_width=240, height=height,
            xlabel="", show_grid=True, xticks=4, **value_format, **hover)   # four ticks fit a phone
    groups = sorted({tuple(data[c][i] for c in table.by) for i in range(len(rows))})
    palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
    markers = ["circle", "square", "triangle", "diamond", "inverted_triangle", "hex", "star", "plus"]
    layers = []
    for k, group in enumerate(groups):
        keep = [i for i in range(len(rows)) if tuple(data[c][i] for c in table.by) == group]
        part = {key: [col[i] for i in keep] for key, col in data.items()}
        label = " · ".join(cell_in(g, lang) for g in group)
        kdims, dims = [_dim(table.x, lang)], vdims + [_dim("row", lang)]
        layers.append(hv.Curve(part, kdims=kdims, vdims=dims, label=label).opts(color=palette[k % 8]))
        layers.append(hv.Scatter(part, kdims=kdims, vdims=dims, label=label).opts(
            color=palette[k % 8], marker=markers[k % 8], size=9, tools=["hover"]))
    # the legend below the plot: beside it, it left no room for the curves on a phone
    return hv.Overlay(layers).opts(logx=table.log_scale(table.x), logy=log, responsive=True, min_width=240, height=420,
                                   legend_position="bottom", legend_cols=2, show_grid=True, **value_format, **hover)


def plot_view(fig: Figure, lang: str = DEFAULT_LANG) -> pn.Column | None:
    """The reproduction's table as an interactive plot, with a choice of the column it draws."""
    table = plot_table(fig.table, fig.name, lang=lang) if fig.table is not None else None
    if table is None or not table.metrics:
        return None
    # the labels in the language, the values the CSV's own column keys (what a link or a test names)
    pick = pn.widgets.Select(name=tr("Column plotted", lang), options={column_label(m, lang): m for m in table.metrics},
                             value=table.primary, width=260, margin=(4, 10), css_classes=["figure-metric"])
    # linked_axes off: every figure has a "row" axis, and linked they would share one list of rows
    plot = pn.pane.HoloViews(pn.bind(table_plot, table, pick, lang=lang), backend="bokeh", sizing_mode="stretch_width",
                             linked_axes=False, margin=(4, 10), css_classes=["figure-plot"],
                             styles={"overflow": "hidden", "max-width": "100%"})
    return pn.Column(pick, plot, sizing_mode="stretch_width")


def _image_card(fig: Figure, caption: str, lang: str = DEFAULT_LANG) -> pn.Card:
    """The rerun's own drawing, folded: the interactive plot above shows its numbers, and the picture is sent
    (a tenth of a megabyte or more) only when opened."""
    card = pn.Card(title=tr("The figure as the rerun drew it", lang), collapsed=True, sizing_mode="stretch_width",
                   css_classes=["figure-image-card"], margin=(4, 10))

    def opened(event):
        if not event.new and not card.objects:
            card.objects = [_image(fig.image, caption, tr("{title}, as drawn by the rerun", lang, title=fig.title),
                                   lang)]
    card.param.watch(opened, "collapsed")
    return card


def figure_view(fig: Figure, lang: str = DEFAULT_LANG) -> pn.Column:
    fig = in_lang(fig, lang)
    command = f"<code>{html.escape(fig.command)}</code>"
    text = [f"<h3 class='figure-title'>{html.escape(fig.title)}</h3>",
            f"<div class='source'>{html.escape(fig.source)} · "
            f"{tr('rerun by {command}', lang, command=command)}</div>"]
    if fig.verdicts:
        css = {True: "holds", False: "fails", None: "undecided"}
        items = "".join(
            f"<li class='{css[v.holds]}'><span class='mark' aria-hidden='true'>{v.mark}</span>"
            f"<span class='verdict-word'>{html.escape(v.word_in(lang))}:</span> {html.escape(v.claim)}"
            f"<div class='evidence'>{_record(lang, v.evidence_lang)}{_en(v.evidence, lang, v.evidence_lang)}"
            + (" " + tr("Decided by: {interval}.", lang, interval=_en(v.decides, lang, v.decides_lang))
               if v.decides else "")
            + "</div></li>"
            for v in fig.verdicts)
        text.append(f"<ul class='verdicts'>{items}</ul>")
    elif not fig.recorded:
        text.append("<p class='note'>" + tr("No verdicts recorded yet: {command} writes them.", lang, command=command)
                    + "</p>")
    if fig.paper_numbers:
        text.append("<div class='note'>" + tr("The paper's own numbers: {numbers}", lang,
                                              numbers=html.escape(fig.paper_numbers)) + "</div>")
    items = [_html("".join(text))]
    plot = plot_view(fig, lang)
    title = f"<b>{html.escape(fig.title)}</b>"
    if plot is not None:
        items += [plot, _html("<figcaption>" + tr("The table of {title}, one column at a time: hover a point for "
                                                  "every number of its row, drag or scroll to zoom.", lang,
                                                  title=title) + "</figcaption>")]
    if fig.image is not None:
        caption = tr("{title}, as our rerun draws it (settings below); the original: {source}.", lang, title=title,
                     source=html.escape(fig.source))
        items.append(_image(fig.image, caption, lang=lang) if plot is None else _image_card(fig, caption, lang))
    if fig.table is not None:
        items.append(_html(table_html(fig.table, lang), margin=(4, 10)))
    if fig.settings:
        # a setting's name through the catalogue (the run's key), its value through the record's templates
        rows = "".join(f"<li><b>{html.escape(tr(k, lang))}</b> = {_run_text(v, lang)}</li>" for k, v in fig.settings)
        items.append(_html(f"<details><summary>{tr('Settings of this run', lang)}</summary><ul>{rows}</ul></details>"))
    if fig.downloads:
        items.append(_downloads(fig.downloads, lang))
    return pn.Column(*items, sizing_mode="stretch_width", css_classes=["figure", f"figure-{fig.name}"])


def other_files_view(others, lang: str = DEFAULT_LANG) -> list:
    names = "".join(f"<li><code>{html.escape(p.name)}</code></li>" for p in others)
    items = [_html(tr("<h2>Other files</h2><p class='note'>In <code>assets/</code>, written by no reproduction of "
                      "the table:</p>", lang) + f"<ul class='other-files'>{names}</ul>")]
    for p in others:
        kind = preview(p, others)
        if kind is None:
            continue
        items.append(_html(f"<h3 class='other-file'><code>{html.escape(p.name)}</code></h3>"))
        if kind == "image":
            items.append(_image(p, html.escape(p.name), lang=lang))
        elif kind == "table":
            items.append(_html(table_html(p, lang)))
        else:
            items.append(pn.pane.Markdown(p.read_text(encoding="utf-8", errors="replace"),
                                          sizing_mode="stretch_width"))
        items.append(_downloads([p], lang))
    return items


class FiguresView(Viewer):
    """The sources' figures and tables as the reproductions wrote them to assets/."""

    lang = param.Selector(default=DEFAULT_LANG, objects=list(LANGS), doc="the language of the section's words")

    def __init__(self, cat: Catalogue | None = None, **params):
        super().__init__(**params)
        self.cat = cat if cat is not None else catalogue()
        self.body = pn.Column(*self._items(), sizing_mode="stretch_width", max_width=MAX_WIDTH,
                              css_classes=["figures"])

    def _items(self) -> list:
        cat, lang = self.cat, self.lang
        if cat.empty:
            return [pn.pane.Markdown(tr("## Paper figures\n\nThe figures and tables of the papers, regenerated by "
                                        "this project, will appear here once they are written to `assets/` "
                                        "(`python -m samplers reproduce all`).", lang), sizing_mode="stretch_width")]
        verdicts = [v for p in cat.papers for f in p.figures for v in f.verdicts]
        held, failed = sum(v.holds is True for v in verdicts), sum(v.holds is False for v in verdicts)
        open_ = len(verdicts) - held - failed
        count = ""
        if verdicts:
            count = "<p>" + (tr("<b>{held} of the {n} claims tested hold</b> in our runs, {failed} do not, and {open} "
                                "cannot be decided by them.", lang, held=held, n=len(verdicts), failed=failed,
                                open=open_) if open_ else
                             tr("<b>{held} of the {n} claims tested hold</b> in our runs, {failed} do not.", lang,
                                held=held, n=len(verdicts), failed=failed)) + "</p>"
        items = [_html(intro(lang) + count)]
        for section in cat.papers:
            # a paper is cited by its authors and title as published
            items.append(_html(f"<h2 class='paper'>{html.escape(section.authors)}: <span class='paper-title' "
                               f"lang='en'>{html.escape(section.title)}</span></h2>"))
            items += [figure_view(f, lang) for f in section.figures]
        if cat.others:
            items += other_files_view(cat.others, lang)
        return items

    @param.depends("lang", watch=True)
    def _relabel(self) -> None:
        """Another language: the section drawn again in it (it holds no run to keep)."""
        self.body.objects = self._items()

    def __panel__(self):
        return self.body
