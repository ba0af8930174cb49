"""The Lessons section: the pages of lessons/*.md, their numerical checks and their live demos."""
from __future__ import annotations

import html
import re

import panel as pn
import param
from mdit_py_plugins.dollarmath import dollarmath_plugin
from panel.viewable import Viewer

from lessons import run_check

from ..model.content import ERRATA_SLUG, GLOSSARY_SLUG, errata_page, glossary_page, list_lessons
from ..model.i18n import DEFAULT_LANG, LANGS
from ..model.presets import demo_query
from .ladder import LadderView
from .lesson_demo import LessonDemo

# TeX's own names for < and >, which would open HTML tags. Not HTML entities: the math is handed to MathJax
# as the HTML source between its delimiters, so an entity is typeset literally (a matrix's & showed as "amp;").
TEX_SAFE = str.maketrans({"<": r"\lt ", ">": r"\gt "})
# Panel's Markdown prints code in a pale blue (#82aaff, a contrast of 2.3 on white): a dark one, 4.5 at least
LESSON_CSS = """
:host { --code-text-color: #1d3f8f; }
code { color: #1d3f8f; background: #f3f5f9; border-radius: 3px; padding: 0 2px; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden;
           clip: rect(0, 0, 0, 0); white-space: nowrap; border: 0; }
div.tex { overflow-x: auto; }
"""


def _tex(content: str, options: dict) -> str:
    """dollarmath's $...$ and $$...$$ as \\(...\\) and $$...$$, which Panel's Markdown model typesets
    with Bokeh's bundled MathJax (served by the server: no CDN).

    That MathJax draws an SVG with role="img" and no text: the drawing is hidden from screen readers and the
    TeX source is read in its place (visually hidden; no delimiters, so MathJax leaves it as text)."""
    body = content.translate(TEX_SAFE)
    tag = "div" if options.get("display_mode") else "span"
    math = f"$${body}$$" if options.get("display_mode") else f"\\({body}\\)"
    return (f"<{tag} class='tex' aria-hidden='true'>{math}</{tag}>"
            f"<span class='sr-only'>{html.escape(content.strip())}</span>")


def math_plugin(md):
    return dollarmath_plugin(md, renderer=_tex, double_inline=True)


class LessonsView(Viewer):
    """A list of lessons; each shows its text, its live demo (embedded, started on demand) and a link
    that opens the demo's preset in the full lab."""

    lang = param.Selector(objects=list(LANGS), default=DEFAULT_LANG)

    def __init__(self, selected: str = "", **params):
        super().__init__(**params)
        self.lessons = list_lessons() + [page for page in (glossary_page(), errata_page()) if page is not None]
        self.demo: LessonDemo | None = None
        self.ladder: LadderView | None = None
        self.font_size = "15px"
        self._doc = None
        self.body = pn.Column(sizing_mode="stretch_width", css_classes=["lessons"])
        if not self.lessons:
            self.body.objects = [pn.pane.Markdown(
                "## Lessons\n\nLessons are coming: one page per theorem of the sources, each with a demo that "
                "opens in the lab. They will appear here from `lessons/*.md`.", sizing_mode="stretch_width")]
            return
        options = {lesson.title: lesson.slug for lesson in self.lessons}
        slugs = [lesson.slug for lesson in self.lessons]
        self.select = pn.widgets.RadioBoxGroup(options=options, value=selected if selected in slugs else slugs[0],
                                               css_classes=["lesson-list"])
        self.page = pn.Column(sizing_mode="stretch_width")
        pn.bind(self._show, self.select, watch=True)
        self.body.objects = [pn.FlexBox(pn.Column("### Lessons", self.select, width=260),
                                        pn.Column(self.page, styles={"flex": "1 1 500px", "min-width": "0"}),
                                        flex_wrap="wrap", sizing_mode="stretch_width")]
        self._show(self.select.value)

    def _show(self, slug: str):
        lesson = next(lesson for lesson in self.lessons if lesson.slug == slug)
        query = demo_query(lesson.demo)
        self.stop()
        self.demo = LessonDemo(query, doc=self._doc, controls=lesson.controls, plots=lesson.plots) if query else None
        parts, text = [], []
        for kind, value in lesson.segments() + [("end", "")]:
            if kind == "markdown":
                text.append(value)
            elif kind == "check":
                text.append("\n" + _check_line(value) + "\n")
            elif text:     # a demo line, or the end: the text so far is one Markdown pane
                parts.append(_markdown("".join(text), self.font_size))
                text = []
            if kind == "demo" and self.demo is not None:
                parts.append(self.demo)
            if kind == "ladder" and self.demo is not None:
                self.ladder = LadderView(self.demo.lab)
                parts.append(pn.Column(pn.pane.HTML("<b>Bias against step size</b>: the demo's samplers, each "
                                                    "at six step sizes", margin=(5, 10)), self.ladder,
                                       sizing_mode="stretch_width", css_classes=["lesson-ladder"],
                                       styles={"border": "1px solid #ddd", "border-radius": "6px"}))
        if self.demo is not None:
            if self.demo not in parts:     # a page without a {{demo}} line
                parts.append(self.demo)
            parts.insert(0, self.demo.top_link)
        self.page.objects = parts

    # the embedded demo's frame loop runs on the session's document, only while its page is shown
    def attach(self, doc) -> None:
        self._doc = doc
        if self.demo is not None:
            self.demo.attach(doc)

    def pause(self) -> None:
        if self.demo is not None:
            self.demo.pause()

    def stop(self) -> None:
        if self.ladder is not None:
            self.ladder.close()
            self.ladder = None
        if self.demo is not None:
            self.demo.stop()
            self.demo = None

    def present(self, on: bool) -> None:
        """Presentation mode: the lesson text in large type (a projector at the back of a room)."""
        self.font_size = "20px" if on else "15px"
        for part in getattr(self, "page", pn.Column()).objects:
            if isinstance(part, pn.pane.Markdown):
                part.styles = {**part.styles, "font-size": self.font_size}

    @property
    def title(self) -> str:
        slug = getattr(getattr(self, "select", None), "value", "")
        return next((lesson.title for lesson in self.lessons if lesson.slug == slug), "")

    def __panel__(self):
        return self.body


def _markdown(text: str, font_size: str = "15px") -> pn.pane.Markdown:
    # links between lessons (`02-recipe.md`, from the errata `../lessons/02-recipe.md`) and to the errata
    # (`../docs/errata.md#e1`) become links to this section
    text = re.sub(r"\]\((?:\.\./lessons/)?(\d\d-[\w-]+)\.md(#[\w-]*)?\)", r"](?tab=lessons&lesson=\1)", text)
    text = re.sub(r"\]\((?:\.\./docs/)?errata\.md(#[\w-]*)?\)", f"](?tab=lessons&lesson={ERRATA_SLUG})", text)
    text = re.sub(r"\]\((?:\.\./lessons/)?glossary\.md(#[\w-]*)?\)", f"](?tab=lessons&lesson={GLOSSARY_SLUG})", text)
    # 15 px: reading text, on a phone as on a projector (Panel's default is 12 px)
    return pn.pane.Markdown(text, plugins=[math_plugin], sizing_mode="stretch_width", css_classes=["lesson-body"],
                            styles={"overflow-x": "auto", "min-width": "0", "font-size": font_size},
                            stylesheets=[LESSON_CSS])


def _check_line(name: str) -> str:
    """A lesson's numerical check, run here (quick size, memoised per process) and shown with its verdict."""
    try:
        res = run_check(name, quick=True)
    except Exception as err:  # a check must never take the page down
        why = str(err).splitlines()[0] if str(err) else type(err).__name__
        return f"> **Numerical check `{name}`** could not run: {html.escape(why)}"
    mark = "skipped" if res.get("skipped") else ("✓ passed" if res.get("passed") else "✗ failed")
    return f"> **Numerical check ({mark}):** {html.escape(str(res.get('text', '')))}"
