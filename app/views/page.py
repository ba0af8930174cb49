"""The whole page: a header and four sections (Lab, Lessons, Paper figures, Models), with the URL kept
in step with the configuration of the section shown, so a copied link reproduces the run."""
from __future__ import annotations

import html
import logging
from urllib.parse import urlencode

import panel as pn
import param
from bokeh.models import CustomJS, TabPanel
from panel.viewable import Viewer

from ..model.config import LabConfig
from ..model.content import ERRATA_SLUG, GLOSSARY_SLUG, list_lessons
from ..model.i18n import DEFAULT_LANG, LANG_NAMES, LANGS, N_, parse_lang, tr, tr_message
from ..model.lab import Lab
from ..model.models import apply_models_query, models_query
from ..model.presets import FIRST_SCREEN
from ..model.reasons import Notice, NoticeKind
from ..model.urlstate import NAV_KEYS, apply_query, nav_errors, parse_search, query_string
from .figures import FiguresView
from .frame_loop import session_schedule
from .lab import LabView, alert_html
from .lessons import LessonsView
from .models import ModelsView, models_view

TABS = ["lab", "lessons", "figures", "models"]
TITLES = [N_("Lab"), N_("Lessons"), N_("Paper figures"), N_("Models")]
# Presentation mode's keys: space plays or pauses, → steps, r resets, as the buttons of the section on show would
# (Tabs are dynamic: only the shown section's buttons are on the page). Single-key shortcuts only while presenting
# (WCAG 2.1.4: they can be turned off), and never while a field, a list or a button has the focus (space and the
# arrows are theirs there).
KEYS_JS = """
if (!window.__lab_keys) {
  window.__lab_keys = true;
  const deep = (root, sel) => {
    const hit = root.querySelector(sel);
    if (hit) return hit;
    for (const el of root.querySelectorAll("*"))
      if (el.shadowRoot) { const found = deep(el.shadowRoot, sel); if (found) return found; }
    return null;
  };
  const press = (sel) => {
    const host = deep(document, sel);
    const button = host && (host.shadowRoot || host).querySelector("button");
    if (!button || button.disabled) return false;
    button.click();
    return true;
  };
  const keys = {" ": ".play-button", "ArrowRight": ".step-button", "r": ".reset-button", "R": ".reset-button"};
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || !(e.key in keys)) return;
    const target = e.composedPath()[0];
    if (target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT", "BUTTON", "OPTION"].includes(
        target.tagName) || target.getAttribute && ["slider", "radio", "tab", "switch", "checkbox"].includes(
        target.getAttribute("role")))) return;
    if (!deep(document, ".present-title")) return;
    if (press(keys[e.key])) e.preventDefault();
  });
  // Bokeh draws a button afresh when its label changes (Play -> Pause): the focus would fall to the page, and a
  // keyboard user's next Enter would do nothing. A button focused from the keyboard keeps it through that.
  // (Focus events are no help to see who had it: between elements of one shadow tree they never reach the
  // document.) A button pressed from the keyboard (Enter, space) keeps it until the focus moves on or the mouse
  // is used.
  const KEEP = ".play-button, .models-play, .present-toggle";
  const keyed = new Set();
  document.addEventListener("mousedown", () => keyed.clear(), true);
  const keep = (host) => {
    const root = host.shadowRoot;
    if (!root || host.__lab_keep) return;
    host.__lab_keep = true;
    root.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") keyed.add(host); });
    root.addEventListener("focusout", (e) => { if (e.relatedTarget) keyed.delete(host); });
    new MutationObserver(() => {
      const button = root.querySelector("button");
      const lost = document.activeElement === null || document.activeElement === document.body;
      if (keyed.has(host) && button && lost) button.focus();
    }).observe(root, {childList: true, subtree: true});
  };
  const all = (root, sel, out) => {
    root.querySelectorAll(sel).forEach(el => out.push(el));
    root.querySelectorAll("*").forEach(el => { if (el.shadowRoot) all(el.shadowRoot, sel, out); });
    return out;
  };
  setInterval(() => all(document, KEEP, []).forEach(keep), 1000);
}
"""
# <html lang> follows the switch (Panel's page template writes lang="en"): screen readers pick their voice by it
HTML_LANG_JS = "document.documentElement.lang = {lang!r};"
LATE_MESSAGE = "dropped a message from a page that has gone (Bokeh had already let go of its session)"


class LateMessageFilter(logging.Filter):
    """Bokeh's keep-alive ping finds a closed page's socket closing and lets go of its session, while
    the socket's last messages (sent before the page closed, queued behind busy frames) are still being
    handled one by one: each then fails Bokeh's `assert self._session is not None` (bokeh/server/
    connection.py), logged with a traceback, and so does the socket's close. Nothing is lost (the page
    has gone) and the app cannot reach that code: the traceback becomes one line, and only that one."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, AssertionError) and exc.__traceback__ is not None:
            tb = exc.__traceback__
            while tb.tb_next is not None:
                tb = tb.tb_next
            code = tb.tb_frame.f_code
            if code.co_name == "session" and code.co_filename.replace("\\", "/").endswith("bokeh/server/connection.py"):
                record.msg, record.args, record.exc_info, record.exc_text = LATE_MESSAGE, (), None, None
                record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def quiet_late_messages() -> None:
    """Install LateMessageFilter where Bokeh (handling a message) and Tornado (closing the socket) log it."""
    for name in ("bokeh.server.protocol_handler", "tornado.application"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, LateMessageFilter) for f in logger.filters):
            logger.addFilter(LateMessageFilter())


class AppView(Viewer):
    """The sections are built when first shown (the Tabs are dynamic: a hidden one sends nothing to the
    page either): a page open builds the one it shows, and a reader who never opens the others costs
    the server nothing for them.

    `lang` is the interface's language: set (by the switch in the header, or a link's lang=), it is set on
    every section, which re-words its texts in place: the runs, their plots and the link's state stay."""

    lang = param.Selector(objects=list(LANGS), default=DEFAULT_LANG)

    def __init__(self, search: str = "", **params):
        query = parse_search(search)
        params.setdefault("lang", parse_lang(query.get("lang")))
        super().__init__(**params)
        tab = query.get("tab", "lab")
        # a Models link holds the Models page's configuration, not the lab's (models.py reads it)
        self._models_query = query if tab == "models" else None
        self.config = LabConfig()
        # a link without a configuration opens on the first screen: a naive sampler against its correction
        first = {} if any(k not in NAV_KEYS for k in query) else parse_search(FIRST_SCREEN)
        errors = apply_query(self.config, first | ({k: v for k, v in query.items() if k in NAV_KEYS}
                                                   if tab == "models" else query))
        slugs = [lesson.slug for lesson in list_lessons()] + [ERRATA_SLUG, GLOSSARY_SLUG]
        self.link_notice = pn.pane.HTML(sizing_mode="stretch_width", margin=(5, 10), css_classes=["link-notice"],
                                        disable_math=True, visible=False)
        self._nav_ignored(nav_errors(query, TABS, slugs))
        self.lab = Lab(self.config, schedule=session_schedule(pn.state.curdoc))
        self._report_ignored(errors)
        self.lab_view: LabView | None = None
        self.lessons: LessonsView | None = None
        self.figures: FiguresView | None = None
        self.models: ModelsView | None = None
        self._lesson = query.get("lesson", "")     # the lesson the Lessons section opens on
        self._recipe_open = query.get("recipe", "") in ("1", "true")
        self._doc = None
        self.tabs = pn.Tabs(*[(tr(title, self.lang), pn.Column()) for title in TITLES],
                            active=TABS.index(tab) if tab in TABS else 0,
                            sizing_mode="stretch_width", dynamic=True, css_classes=["sections"])
        self.autoplay = query.get("play", "") in ("1", "true")
        self._location = None
        self._last_search = None
        self.heading = pn.pane.HTML(sizing_mode="stretch_width", margin=(5, 10), css_classes=["page-heading"],
                                    styles={"flex": "1 1 320px", "min-width": "0"})
        self.present_button = pn.widgets.Toggle(name="Present", value=query.get("present", "") in ("1", "true"),
                                                width=90, margin=(8, 10), css_classes=["present-toggle"])
        # the switch's label names it in both languages: a reader of either finds it
        self.lang_select = pn.widgets.Select(name="Language / 言語", value=self.lang,
                                             options={LANG_NAMES[k]: k for k in LANGS}, width=110,
                                             margin=(0, 10, 4, 10), css_classes=["lang-switch"])
        self.lang_select.jscallback(value="document.documentElement.lang = cb_obj.value === '日本語' || "
                                          "cb_obj.value === 'ja' ? 'ja' : 'en';")
        self.lang_select.param.watch(lambda e: setattr(self, "lang", e.new), "value")
        # on a phone the switch and the Present button go under the app's name (a row would squeeze the name)
        self.header = pn.FlexBox(self.heading, self.lang_select, self.present_button, flex_wrap="wrap",
                                 sizing_mode="stretch_width")
        if self.link_notice.visible:
            self.header = pn.Column(self.header, self.link_notice, sizing_mode="stretch_width")
        # first among the watchers of `active`: the others read the section being shown
        self.tabs.param.watch(self._build_shown, "active")
        self.present_button.param.watch(self._on_present, "value")
        self.param.watch(self._on_lang, "lang")
        self.lab.param.watch(self._show_heading, "version")
        self.tabs.param.watch(self._show_heading, "active")
        self._build_shown()
        self._on_present()

    def _nav_ignored(self, errors: list[str]) -> None:
        """Navigation a link asks for that does not exist: the section shown may not be the lab, so the page
        says it above the sections, in the words of the lab's own notice."""
        self._nav_errors = errors
        if errors:
            self.link_notice.object = alert_html(html.escape(tr_message(
                "Some of the link was ignored: " + "; ".join(errors), self.lang)), "warning")
            self.link_notice.visible = True

    def _build_shown(self, *_) -> None:
        """Build the section on show the first time it is shown, and bind it like the others."""
        tab = TABS[self.tabs.active]
        if tab == "lab" and self.lab_view is None:
            self.lab_view = view = LabView(self.lab, recipe_open=self._recipe_open, lang=self.lang)
            view.present(self.presenting)
            if self._location is not None:
                view.recipe_card.param.watch(self._write_url, "collapsed")
            if self._doc is not None:
                view.attach(self._doc)
                if self.autoplay:
                    self.lab.play()
        elif tab == "lessons" and self.lessons is None:
            self.lessons = view = LessonsView(self._lesson, lang=self.lang)
            view.present(self.presenting)
            if self._doc is not None:
                view.attach(self._doc)
            self._watch_lesson()
        elif tab == "figures" and self.figures is None:
            self.figures = view = FiguresView(lang=self.lang)
        elif tab == "models" and self.models is None:
            self.models = view = models_view(self._models_query or {}, doc=self._doc or pn.state.curdoc, lang=self.lang)
            view.present(self.presenting)
            if self._doc is not None:
                view.attach(self._doc)
            if self._location is not None:
                self._watch_models()
            if self.autoplay:
                view.lab.play()
        else:
            return
        self.tabs[self.tabs.active] = (tr(TITLES[self.tabs.active], self.lang), view)

    def _on_lang(self, *_) -> None:
        """Every section, the tabs' titles and the header in the new language; the runs go on as they were."""
        if self.lang_select.value != self.lang:
            self.lang_select.value = self.lang
        for view in (self.lab_view, self.lessons, self.figures, self.models):
            if view is not None:
                view.lang = self.lang
        titles = [tr(title, self.lang) for title in TITLES]
        self.tabs._names[:] = titles
        # a tab's title lives on its Bokeh TabPanel, which Panel reuses for an object it already shows and
        # BokehJS does not redraw when only its title changes: new TabPanels around the same children (their
        # views, the sections' figures among them, are kept), and Panel told of them
        for ref, (model, _parent) in list(self.tabs._models.items()):
            panels = self.tabs._panels.get(ref, {})
            new = [TabPanel(title=title, name=old.name, child=old.child, closable=old.closable)
                   for old, title in zip(model.tabs, titles)]
            for key, old in list(panels.items()):
                if old in model.tabs:
                    panels[key] = new[model.tabs.index(old)]
            model.tabs = new
        self._nav_ignored(self._nav_errors)
        self._on_present()
        if self._location is not None:
            self._write_url()

    def _watch_models(self) -> None:
        self.models.cfg.param.watch(self._write_url, list(self.models.cfg.param.values().keys() - {"name"}))

    def _watch_lesson(self) -> None:
        select = getattr(self.lessons, "select", None)
        if select is None:
            return
        select.param.watch(self._show_heading, "value")
        if self._location is not None:
            select.param.watch(self._write_url, "value")

    @property
    def presenting(self) -> bool:
        return self.present_button.value

    def _on_present(self, *_):
        on = self.presenting
        self.present_button.name = tr("End presentation" if on else "Present", self.lang)
        self.present_button.width = 150 if on else 90
        for view in (self.lab_view, self.lessons, self.models):
            if view is not None:
                view.present(on)
        self._show_heading()

    def _show_heading(self, *_):
        """The app's name, or in presentation mode what is on show: the lesson, or who runs on which target."""
        lang = self.lang
        if not self.presenting:
            self.heading.object = (
                "<div style='display:flex;align-items:baseline;gap:12px;flex-wrap:wrap'>"
                f"<span style='font-size:20px;font-weight:700'>{tr('SG-MCMC lab', lang)}</span>"
                "<span style='color:#555;font-size:13px'>" + tr(
                    "every sampler is a recipe (H, D, Q): pick or edit one and watch it against the exact density",
                    lang) + "</span></div>")
            return
        tab = TABS[self.tabs.active]
        if tab == "lessons":
            title = self.lessons.title if self.lessons is not None else ""
        elif tab == "lab" and self.lab.sides:
            pair = tr(" vs ", lang).join(side.title_in(lang) for side in self.lab.sides)
            title = tr("{pair} on {target}", lang, pair=pair, target=self.config.potential)
        elif tab == "models":
            runs = self.models.lab.runs if self.models is not None else None
            title = (tr("{pair} on {target}", lang, pair=tr(" vs ", lang).join(s.title for s in runs.sides),
                        target=runs.model.title) if runs else tr("Models", lang))
        else:
            title = tr("Paper figures", lang)
        self.heading.object = (f"<div class='present-title' style='font-size:28px;font-weight:700;white-space:nowrap;"
                               f"overflow:hidden;text-overflow:ellipsis' title='{html.escape(title, quote=True)}'>"
                               f"{html.escape(title)}</div>")

    def start(self, doc, location=None):
        """Session start: bind the frame loop and the URL."""
        self._doc = doc
        if doc is not None:
            doc.js_on_event("document_ready", CustomJS(code=KEYS_JS + HTML_LANG_JS.format(lang=self.lang)))
        for view in (self.lab_view, self.lessons, self.models):
            if view is not None:
                view.attach(doc)
        self.tabs.param.watch(self._on_tab, "active")
        self._location = location
        if location is not None:
            self.config.param.watch(self._write_url, [p for p in self.config.param if p != "name"])
            self.lab.param.watch(self._write_url, ["version", "blocks"])
            self.tabs.param.watch(self._write_url, "active")
            self.present_button.param.watch(self._write_url, "value")
            if self.lessons is not None and getattr(self.lessons, "select", None) is not None:
                self.lessons.select.param.watch(self._write_url, "value")
            if self.lab_view is not None:
                self.lab_view.recipe_card.param.watch(self._write_url, "collapsed")
            if self.models is not None:
                self._watch_models()
            location.param.watch(self._read_url, "search")
            # the browser sets the location from its address bar when the page loads: write after that,
            # or a link the lab corrected (bad values dropped) would keep its bad values
            if doc is not None and doc.session_context is not None:
                pn.state.onload(self._write_url)
            else:
                self._write_url()
        # a link's play=1 plays the lab when the lab is shown (here, or when its tab is first opened)
        if self.autoplay and self.lab_view is not None:
            self.lab.play()

    def _on_tab(self, event):
        """Only the shown section runs: leaving one pauses its run (two runs would halve both frame rates)."""
        if TABS[event.new] != "lessons" and self.lessons is not None:
            self.lessons.pause()
        if TABS[event.new] != "lab":
            self.lab.pause()
        if TABS[event.new] != "models" and self.models is not None:
            self.models.lab.pause()

    def nav(self) -> dict:
        tab = TABS[self.tabs.active]
        lesson = getattr(getattr(self.lessons, "select", None), "value", "") if tab == "lessons" else ""
        recipe = self.lab_view.recipe_open if self.lab_view is not None else self._recipe_open
        return {"tab": tab if tab != "lab" else "", "lesson": lesson, "present": "1" if self.presenting else "",
                "recipe": "1" if recipe else "", "lang": self.lang if self.lang != DEFAULT_LANG else ""}

    def _write_url(self, *_):
        """The URL holds the configuration the plots were built from: an edit that blocks the run
        (invalid D or Q) is not written, so a copied link always opens a working lab."""
        if TABS[self.tabs.active] == "models" and self.models is not None:
            search = "?" + urlencode(models_query(self.models.cfg) | {k: v for k, v in self.nav().items() if v})
        elif not self.lab.valid_config and self.lab.building:
            return                 # the first build has not finished: its version change writes the URL
        else:
            search = query_string(self.lab.valid_config or self.config, self.nav())
        self._last_search = search
        if self._location.search != search:
            self._location.search = search

    def _read_url(self, event):
        """Back/forward in the browser, or its address bar as the page loads: apply the URL's configuration.
        A URL that changes nothing to build (its bad values dropped, say) is corrected at once; otherwise the
        new runs' version writes it. (The page's own address can arrive after the onload write, under load:
        its bad values then stayed in the address bar.)"""
        if event.new == self._last_search:
            return
        query = parse_search(event.new)
        self._last_search = event.new
        self.lang = parse_lang(query.get("lang"))
        if query.get("tab") == "models":
            if self.models is None:
                self._models_query = query
            else:
                errors = apply_models_query(self.models.cfg, query)
                if errors:
                    self.models.lab.notice = Notice(NoticeKind.LINK, "Some of the link was ignored: " +
                                                    "; ".join(errors))
                self._write_url()
            return
        self._report_ignored(apply_query(self.config, query))
        if not self.lab.building:
            self._write_url()

    def _report_ignored(self, errors: list[str]) -> None:
        if errors:
            self.lab.notice = Notice(NoticeKind.LINK, "Some of the link was ignored: " + "; ".join(errors))

    def stop(self):
        for view in (self.lab_view, self.lessons, self.models):
            if view is not None:
                view.stop()

    def on_session_destroyed(self, session_context):
        self.stop()

    def __panel__(self):
        return pn.Column(self.header, self.tabs, sizing_mode="stretch_width")
