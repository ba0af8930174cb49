"""The whole page: a header and three sections (Lab, Lessons, Paper figures), with the URL kept
in step with the configuration so a copied link reproduces the run."""
from __future__ import annotations

import html

import panel as pn
from panel.viewable import Viewer

from ..model.config import LabConfig
from ..model.lab import Lab
from ..model.reasons import Notice, NoticeKind
from ..model.urlstate import apply_query, parse_search, query_string
from .figures import FiguresView
from .frame_loop import session_schedule
from .lab import LabView
from .lessons import LessonsView

TABS = ["lab", "lessons", "figures"]


class AppView(Viewer):
    def __init__(self, search: str = "", **params):
        super().__init__(**params)
        query = parse_search(search)
        self.config = LabConfig()
        errors = apply_query(self.config, query)
        # runs are built on a worker: the page opens (and other sessions play) meanwhile
        self.lab = Lab(self.config, schedule=session_schedule(pn.state.curdoc))
        self._report_ignored(errors)
        self.lab_view = LabView(self.lab)
        tab = query.get("tab", "lab")
        self.lessons = LessonsView(query.get("lesson", ""))
        self.tabs = pn.Tabs(("Lab", self.lab_view), ("Lessons", self.lessons),
                            ("Paper figures", FiguresView()), active=TABS.index(tab) if tab in TABS else 0,
                            sizing_mode="stretch_width", dynamic=True, css_classes=["sections"])
        self.autoplay = query.get("play", "") in ("1", "true")
        self._location = None
        self._last_search = None
        self.heading = pn.pane.HTML(sizing_mode="stretch_width", margin=(5, 10), css_classes=["page-heading"])
        self.present_button = pn.widgets.Toggle(name="Present", value=query.get("present", "") in ("1", "true"),
                                                width=90, margin=(8, 10), css_classes=["present-toggle"])
        self.header = pn.Row(self.heading, self.present_button, sizing_mode="stretch_width")
        self.present_button.param.watch(self._on_present, "value")
        self.lab.param.watch(self._show_heading, "version")
        self.tabs.param.watch(self._show_heading, "active")
        if getattr(self.lessons, "select", None) is not None:
            self.lessons.select.param.watch(self._show_heading, "value")
        self._on_present()

    @property
    def presenting(self) -> bool:
        return self.present_button.value

    def _on_present(self, *_):
        on = self.presenting
        self.present_button.name = "End presentation" if on else "Present"
        self.present_button.width = 150 if on else 90
        self.lab_view.present(on)
        self.lessons.present(on)
        self._show_heading()

    def _show_heading(self, *_):
        """The app's name, or in presentation mode what is on show: the lesson, or who runs on which target."""
        if not self.presenting:
            self.heading.object = (
                "<div style='display:flex;align-items:baseline;gap:12px;flex-wrap:wrap'>"
                "<span style='font-size:20px;font-weight:700'>SG-MCMC lab</span>"
                "<span style='color:#555;font-size:13px'>every sampler is a recipe (H, D, Q): pick or edit one and "
                "watch it against the exact density</span></div>")
            return
        tab = TABS[self.tabs.active]
        if tab == "lessons":
            title = self.lessons.title
        elif tab == "lab" and self.lab.sides:
            title = " vs ".join(side.title for side in self.lab.sides) + f" on {self.config.potential}"
        else:
            title = "Paper figures"
        self.heading.object = (f"<div class='present-title' style='font-size:28px;font-weight:700'>"
                               f"{html.escape(title)}</div>")

    def start(self, doc, location=None):
        """Session start: bind the frame loop and the URL."""
        self.lab_view.attach(doc)
        self.lessons.attach(doc)
        self.tabs.param.watch(self._on_tab, "active")
        self._location = location
        if location is not None:
            self.config.param.watch(self._write_url, [p for p in self.config.param if p != "name"])
            self.lab.param.watch(self._write_url, ["version", "blocks"])
            self.tabs.param.watch(self._write_url, "active")
            self.present_button.param.watch(self._write_url, "value")
            if getattr(self.lessons, "select", None) is not None:
                self.lessons.select.param.watch(self._write_url, "value")
            location.param.watch(self._read_url, "search")
            # the browser sets the location from its address bar when the page loads: write after that,
            # or a link the lab corrected (bad values dropped) would keep its bad values
            if doc is not None and doc.session_context is not None:
                pn.state.onload(self._write_url)
            else:
                self._write_url()
        if self.autoplay:
            self.lab.play()

    def _on_tab(self, event):
        """Only the shown section runs: leaving one pauses its run (two runs would halve both frame rates)."""
        if TABS[event.new] != "lessons":
            self.lessons.pause()
        if TABS[event.new] != "lab":
            self.lab.pause()

    def nav(self) -> dict:
        tab = TABS[self.tabs.active]
        lesson = getattr(getattr(self.lessons, "select", None), "value", "") if tab == "lessons" else ""
        return {"tab": tab if tab != "lab" else "", "lesson": lesson, "present": "1" if self.presenting else ""}

    def _write_url(self, *_):
        """The URL holds the configuration the plots were built from: an edit that blocks the run
        (invalid D or Q) is not written, so a copied link always opens a working lab."""
        if not self.lab.valid_config and self.lab.building:
            return                 # the first build has not finished: its version change writes the URL
        search = query_string(self.lab.valid_config or self.config, self.nav())
        self._last_search = search
        if self._location.search != search:
            self._location.search = search

    def _read_url(self, event):
        """Back/forward in the browser: apply the URL's configuration."""
        if event.new == self._last_search:
            return
        query = parse_search(event.new)
        self._last_search = event.new
        self._report_ignored(apply_query(self.config, query))

    def _report_ignored(self, errors: list[str]) -> None:
        if errors:
            self.lab.notice = Notice(NoticeKind.LINK, "Some of the link was ignored: " + "; ".join(errors))

    def stop(self):
        self.lab_view.stop()
        self.lessons.stop()

    def on_session_destroyed(self, session_context):
        self.stop()

    def __panel__(self):
        return pn.Column(self.header, self.tabs, sizing_mode="stretch_width")
