"""The Lessons section: the pages of lessons/*.md, their numerical checks and their live demos, in English or
in Japanese (`lang`: lessons/ja/*.md, the same demos and checks). Changing the language redraws the words and
keeps the demo, its run and its ladder as they are."""
from __future__ import annotations

import html
import re
from functools import partial

import panel as pn
import param
from bokeh.models import CustomJS
from mdit_py_plugins.dollarmath import dollarmath_plugin
from panel.viewable import Viewer

from lessons import run_check

from ..model.content import ERRATA_SLUG, GLOSSARY_SLUG, errata_page, glossary_page, list_lessons
from ..model.i18n import DEFAULT_LANG, LANGS, tr, tr_message
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
/* a display equation wider than its column (a phone) scrolls inside its own box, which the keyboard can reach */
div.tex-scroll { overflow-x: auto; overflow-y: hidden; max-width: 100%; position: relative; }
div.tex-scroll:focus-visible { outline: 2px solid #1d3f8f; outline-offset: 2px; }
"""
# A link to an entry of the errata (`?tab=lessons&lesson=errata#e13`, or `#e13` within the page) scrolls to its
# anchor: the page is drawn inside shadow roots, where the browser's own search for a fragment does not reach.
ANCHOR_JS = """
if (!window.__lesson_anchors) {
  window.__lesson_anchors = true;
  const find = (root, id) => {
    const hit = root.getElementById ? root.getElementById(id) : root.querySelector("#" + CSS.escape(id));
    if (hit) return hit;
    for (const el of root.querySelectorAll("*"))
      if (el.shadowRoot) { const found = find(el.shadowRoot, id); if (found) return found; }
    return null;
  };
  const go = (tries) => {
    const id = decodeURIComponent(window.location.hash.slice(1));
    if (!/^[A-Za-z][\\w-]*$/.test(id)) return;
    const target = find(document, id);
    if (target) target.scrollIntoView({block: "start"});
    else if (tries > 0) setTimeout(() => go(tries - 1), 250);    // the page is still being drawn
  };
  window.addEventListener("hashchange", () => go(8));
  go(40);
}
"""


def _tex(content: str, options: dict, lang: str = DEFAULT_LANG) -> str:
    """dollarmath's $...$ and $$...$$ as \\(...\\) and $$...$$, which Panel's Markdown model typesets
    with Bokeh's bundled MathJax (served by the server: no CDN).

    That MathJax draws an SVG with role="img" and no text: the drawing is hidden from screen readers and the
    TeX source is read in its place (visually hidden; no delimiters, so MathJax leaves it as text). A display
    equation sits in a box of its own that scrolls sideways when the column is narrower (a phone), focusable
    and named so that a keyboard can scroll it too (axe's scrollable-region-focusable)."""
    body = content.translate(TEX_SAFE)
    source = f"<span class='sr-only'>{html.escape(content.strip())}</span>"
    if not options.get("display_mode"):
        return f"<span class='tex' aria-hidden='true'>\\({body}\\)</span>{source}"
    label = html.escape(tr("Equation", lang), quote=True)
    return (f"<div class='tex-scroll' tabindex='0' role='group' aria-label='{label}'>"
            f"<div class='tex' aria-hidden='true'>$${body}$$</div>{source}</div>")


def math_plugin(md, lang: str = DEFAULT_LANG):
    return dollarmath_plugin(md, renderer=partial(_tex, lang=lang), double_inline=True)


# one plugin per language, made once: Panel caches its Markdown parser by its plugins
MATH_PLUGINS = {lang: partial(math_plugin, lang=lang) for lang in LANGS}


def pages(lang: str = DEFAULT_LANG) -> list:
    """The section's pages in the language: the lessons, then the glossary and the errata."""
    return list_lessons(lang=lang) + [page for page in (glossary_page(lang=lang), errata_page(lang=lang))
                                      if page is not None]


class LessonsView(Viewer):
    """A list of lessons; each shows its text, its live demo (embedded, started on demand) and a link
    that opens the demo's preset in the full lab."""

    lang = param.Selector(default=DEFAULT_LANG, objects=list(LANGS), doc="the language of the pages and controls")

    def __init__(self, selected: str = "", **params):
        super().__init__(**params)
        self.lessons = pages(self.lang)
        self.demo: LessonDemo | None = None
        self.ladder: LadderView | None = None
        self._ladder_box = None
        self._slug = None
        self.font_size = "15px"
        self._doc = None
        self.body = pn.Column(sizing_mode="stretch_width", css_classes=["lessons"])
        if not self.lessons:
            self.body.objects = [pn.pane.Markdown(tr(
                "## Lessons\n\nLessons are coming: one page per theorem of the sources, each with a demo that "
                "opens in the lab. They will appear here from `lessons/*.md`.", self.lang),
                sizing_mode="stretch_width")]
            return
        options = {lesson.title: lesson.slug for lesson in self.lessons}
        slugs = [lesson.slug for lesson in self.lessons]
        self.select = pn.widgets.RadioBoxGroup(options=options, value=selected if selected in slugs else slugs[0],
                                               css_classes=["lesson-list"])
        self.page = pn.Column(sizing_mode="stretch_width")
        self.heading = pn.pane.Markdown(f"### {tr('Lessons', self.lang)}", margin=(5, 10))
        pn.bind(self._show, self.select, watch=True)
        self.body.objects = [pn.FlexBox(pn.Column(self.heading, self.select, width=260),
                                        pn.Column(self.page, styles={"flex": "1 1 500px", "min-width": "0"}),
                                        flex_wrap="wrap", sizing_mode="stretch_width")]
        self._show(self.select.value)

    def _show(self, slug: str):
        """Open a page: a new demo (the previous one stops), then its words."""
        lesson = next(lesson for lesson in self.lessons if lesson.slug == slug)
        query = demo_query(lesson.demo)
        self.stop()
        self._slug = slug
        self.demo = LessonDemo(query, doc=self._doc, controls=lesson.controls, plots=lesson.plots,
                               lang=self.lang) if query else None
        self._render(lesson)

    def _render(self, lesson):
        """The page's words around its demo and ladder, which are kept (a language change redraws the words)."""
        parts, text = [], []
        for kind, value in lesson.segments() + [("end", "")]:
            if kind == "markdown":
                text.append(value)
            elif kind == "check":
                text.append("\n" + _check_line(value, self.lang) + "\n")
            elif text:     # a demo line, or the end: the text so far is one Markdown pane
                parts.append(_markdown("".join(text), self.font_size, self.lang))
                text = []
            if kind == "demo" and self.demo is not None:
                parts.append(self.demo)
            if kind == "ladder" and self.demo is not None:
                if self.ladder is None:
                    self.ladder = LadderView(self.demo.lab, lang=self.lang)
                    self._ladder_box = pn.Column(pn.pane.HTML("", margin=(5, 10)), self.ladder,
                                                 sizing_mode="stretch_width", css_classes=["lesson-ladder"],
                                                 styles={"border": "1px solid #ddd", "border-radius": "6px"})
                self._ladder_box[0].object = tr("<b>Bias against step size</b>: the demo's samplers, each at six "
                                                "step sizes", self.lang)
                parts.append(self._ladder_box)
        if self.demo is not None:
            if self.demo not in parts:     # a page without a {{demo}} line
                parts.append(self.demo)
            parts.insert(0, self.demo.top_link)
        self.page.objects = parts

    @param.depends("lang", watch=True)
    def _relabel(self):
        """Another language: the list's titles, the heading, the page's words and the demo's labels; the demo
        and its run stay."""
        self.lessons = pages(self.lang)
        if getattr(self, "select", None) is None:
            return
        value = self.select.value
        self.select.param.update(options={lesson.title: lesson.slug for lesson in self.lessons}, value=value)
        self.heading.object = f"### {tr('Lessons', self.lang)}"
        if self.demo is not None:
            self.demo.lang = self.lang
        if self.ladder is not None:
            self.ladder.lang = self.lang
        lesson = next((lesson for lesson in self.lessons if lesson.slug == self._slug), None)
        if lesson is not None:
            self._render(lesson)

    # the embedded demo's frame loop runs on the session's document, only while its page is shown
    def attach(self, doc) -> None:
        self._doc = doc
        if doc is not None and not getattr(doc, "_lesson_anchors", False):
            doc._lesson_anchors = True
            doc.js_on_event("document_ready", CustomJS(code=ANCHOR_JS))
        if self.demo is not None:
            self.demo.attach(doc)

    def pause(self) -> None:
        if self.demo is not None:
            self.demo.pause()

    def stop(self) -> None:
        if self.ladder is not None:
            self.ladder.close()
            self.ladder = None
            self._ladder_box = None
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


def _markdown(text: str, font_size: str = "15px", lang: str = DEFAULT_LANG) -> pn.pane.Markdown:
    # links between lessons (`02-recipe.md`, from the errata `../lessons/02-recipe.md`) and to the errata
    # (`../docs/errata.md#e1`, its entry's anchor kept) become links to this section, in the page's language;
    # links into the lab (`?tab=lab&...`) keep the language too
    keep = "" if lang == DEFAULT_LANG else f"&lang={lang}"
    text = re.sub(r"\]\((?:\.\./lessons/)?(\d\d-[\w-]+)\.md(#[\w-]*)?\)", rf"](?tab=lessons&lesson=\1{keep})", text)
    text = re.sub(r"\]\((?:\.\./docs/)?errata\.md(#[\w-]*)?\)",
                  lambda m: f"](?tab=lessons&lesson={ERRATA_SLUG}{keep}{m.group(1) or ''})", text)
    text = re.sub(r"\]\((?:\.\./lessons/)?glossary\.md(#[\w-]*)?\)", f"](?tab=lessons&lesson={GLOSSARY_SLUG}{keep})",
                  text)
    # an in-page link of the errata (`[E2](#e2)`): the section's own link, which opens the page at the entry
    text = re.sub(r"\]\((#e\d+)\)", rf"](?tab=lessons&lesson={ERRATA_SLUG}{keep}\1)", text)
    if keep:
        text = re.sub(r"\]\((\?tab=(?:lab|figures|models)\b[^)\s#]*)", rf"](\1{keep}", text)
    # 15 px: reading text, on a phone as on a projector (Panel's default is 12 px)
    return pn.pane.Markdown(text, plugins=[MATH_PLUGINS[lang]], sizing_mode="stretch_width",
                            css_classes=["lesson-body"],
                            styles={"overflow-x": "auto", "min-width": "0", "font-size": font_size},
                            stylesheets=[LESSON_CSS])


def _check_line(name: str, lang: str = DEFAULT_LANG) -> str:
    """A lesson's numerical check, run here (quick size, memoised per process) and shown with its verdict. The
    check's own line (its numbers) is the library's, in English, put in the page's language by its template
    (app/locale/ja/checks.toml); a line without one is shown in English and marked so, for a screen reader's voice."""
    try:
        res = run_check(name, quick=True)
    except Exception as err:  # a check must never take the page down
        why = str(err).splitlines()[0] if str(err) else type(err).__name__
        return tr("> **Numerical check `{name}`** could not run: {why}", lang, name=name, why=html.escape(why))
    mark = (tr("skipped", lang) if res.get("skipped") else
            tr("✓ passed", lang) if res.get("passed") else tr("✗ failed", lang))
    text = str(res.get("text", ""))
    shown = tr_message(text, lang)
    line = html.escape(shown)
    if lang != DEFAULT_LANG and shown == text:
        line = f"<span lang='en'>{line}</span>"
    return tr("> **Numerical check ({mark}):** {text}", lang, mark=mark, text=line)
