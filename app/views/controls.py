"""Side-panel controls: potential, sampler and its parameters, run controls, comparison.

Widgets write into the LabConfig (the single source of truth, mirrored in the URL) and
follow it when it changes elsewhere (a pasted link, a comparison preset). Bad input shows
its reason next to the field and is not applied. What only displays the lab's state is bound
to it (`pn.bind`, parameter references); watchers remain where an edit must be checked or
applied to several settings at once.
"""
from __future__ import annotations

import html
from functools import partial

import panel as pn
import param
from panel.viewable import Viewer

from samplers.registry import REGISTRY
from samplers.targets.potential import PotentialError
from samplers.targets.presets import parse_box

from ..model.autoeps import wants_auto
from ..model.config import refusal
from ..model.design import DESIGN
from ..model.i18n import DEFAULT_LANG, LANGS, N_, tr, tr_message
from ..model.lab import FRAME_BUDGET_S, Lab
from ..model.modelupload import read_model_upload
from ..model.presets import (
    TYPED,
    compare_pairs,
    default_params,
    param_help,
    potential_names,
    sampler_label,
    samplers,
    validate_params,
)
from ..model.runner import Failure
from .ladder import AutoEpsControl

TYPED_OPTION = N_("type U(x) or U(x, y)…")
LANG = param.Selector(objects=list(LANGS), default=DEFAULT_LANG)   # each control's language (LabView sets it)
MORE = ("beta", "eps_b", "eps_c")     # ParamFields shows these on request
# the target's and the sampler's pickers head their sections: their labels are the headings (a heading of its
# own would be one more pane, each a cost at every page open)
HEADING_LABEL = "label { font-weight: bold; font-size: 15px; }"
# Bokeh's spinner arrows are unnamed buttons (axe-core: button-name, critical): hidden, the field still steps with
# the arrow keys and takes typed numbers
NO_SPIN = ".bk-spin-btn { display: none !important; }"
# Bootstrap's green and amber under white text fail WCAG AA's 4.5:1 (2.5:1): darker green, black on amber
PLAY_CSS = (".bk-btn-success { background-color: #1e7b34; border-color: #1a6b2d; color: #fff; }"
            ".bk-btn-warning { color: #000; }")


def play_button(play_state, state, css_class: str) -> pn.widgets.Button:
    """Play/Pause, its label, colour and disabled state `play_state(*state values)` as they change."""
    button = pn.widgets.Button(refs=pn.bind(play_state, *state), css_classes=[css_class], width=90,
                               stylesheets=[PLAY_CSS])
    # Panel 1.9 sets button_type from a ref's first value and then back to its `color` alias's default: the first
    # state is set again once the button exists (Play was grey until the first press)
    button.param.update(**play_state(*(getattr(p.owner, p.name) for p in state)))
    return button


def error_html(text: str) -> str:
    return f"<div class='lab-error' style='color:#b00020;font-size:12px'>{html.escape(text)}</div>" if text else ""


def ok_html(text: str) -> str:
    return f"<div class='lab-ok' style='color:#1b5e20;font-size:12px'>{html.escape(text)}</div>" if text else ""


class SettingFields:
    """Number fields for a configuration's settings (LabConfig's, ModelsConfig's), labelled and checked by their
    declarations. A value out of bounds is refused where it was typed: the reason (the field's label, the bound)
    shows in `message` and the field goes back to the value in use, so the screen never shows a value that does not
    run. A change of a setting from elsewhere (a link) shows in its field."""

    def __init__(self, cfg, css_class: str, lang: str = DEFAULT_LANG):
        self.cfg, self.lang = cfg, lang
        self.message = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=[css_class], margin=(0, 10))
        self._showing = False       # a field is being set to the value in use: not an edit
        self._fields = {}
        self._why = ""

    def relabel(self, lang: str) -> None:
        """The fields' labels (the settings' declared labels, through the catalogue) and the message."""
        self.lang = lang
        for name, widget in self._fields.items():
            widget.name = tr(self.cfg.param[name].label, lang)
        self.message.object = error_html(tr_message(self._why, lang))

    def field(self, widget_type, name: str, **options):
        options["stylesheets"] = [*options.get("stylesheets", []), NO_SPIN]
        widget = widget_type(name=tr(self.cfg.param[name].label, self.lang), value=getattr(self.cfg, name),
                             **options)
        self._fields[name] = widget
        widget.param.watch(lambda event: self.typed(widget, name, event.new), "value")
        self.cfg.param.watch(lambda event: self.show(widget, event.new), name)
        return widget

    def typed(self, widget, name: str, value) -> bool:
        """Apply a typed value, or refuse it (its reason shown, the field back to the value in use)."""
        if self._showing:
            return False
        why = refusal(self.cfg, name, value)
        self._why = why or ""
        self.message.object = error_html(tr_message(self._why, self.lang))
        if why:
            self.show(widget, getattr(self.cfg, name))
            return False
        setattr(self.cfg, name, value)
        return True

    def show(self, widget, value) -> None:
        self._showing = True
        try:
            widget.value = value
        finally:
            self._showing = False


class PotentialPicker(Viewer):
    """A preset, or U typed into a field: the parser's message shows as one types, and a valid
    U becomes the target at once (an invalid one blocks the run)."""

    lang = LANG

    def __init__(self, lab: Lab, **params):
        super().__init__(**params)
        self.lab, self.cfg = lab, lab.config
        self._uploaded = {}         # an uploaded model's file name -> its target
        self._upload_text = self._status = None
        typed = self.cfg.potential.startswith(TYPED)
        self.select = pn.widgets.Select(name=tr("Target", self.lang), options=self._options(),
                                        value=TYPED if typed else self.cfg.potential,
                                        sizing_mode="stretch_width", stylesheets=[HEADING_LABEL])
        self.expr = self.status = None        # the field for a typed U: made when first asked for
        self.info = pn.pane.HTML(pn.bind(self._info, lab.param.version, self.param.lang), sizing_mode="stretch_width",
                                 margin=(0, 10))
        self.formula = pn.pane.LaTeX(pn.bind(self._formula, lab.param.version), renderer="katex",
                                     sizing_mode="stretch_width", margin=(0, 10),
                                     styles={"font-size": "0.9em", "overflow-x": "auto"})
        self._pending = None
        # a model file and its CSV (docs/models.md), built off the loop in the runner's sandbox
        # named: its label is what a screen reader announces (axe-core: a file field needs one)
        self.upload = pn.widgets.FileInput(name=tr("Your model: a YAML file and its CSV", self.lang),
                                           accept=".yaml,.yml,.csv",
                                           multiple=True, sizing_mode="stretch_width", css_classes=["model-upload"])
        self.upload.param.watch(self._on_upload, "value")
        self.upload_status = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["model-upload-status"],
                                          margin=(0, 10))
        upload = pn.Column(self.upload, self.upload_status,
                           sizing_mode="stretch_width")
        self.layout = pn.Column(self.select, self.formula, self.info, upload, sizing_mode="stretch_width")
        if typed:
            self._typed_field()
        self.select.param.watch(self._on_select, "value")
        self.cfg.param.watch(self._follow, "potential")
        self.param.watch(self._words, "lang")

    def _options(self) -> dict:
        """The presets by name, the typed U, and the models uploaded in this session."""
        options = {name: name for name in potential_names()}
        options[tr(TYPED_OPTION, self.lang)] = TYPED
        options.update({tr("uploaded: {name}", self.lang, name=name): spec for name, spec in self._uploaded.items()})
        return options

    def _words(self, *_) -> None:
        lang = self.lang
        self.select.param.update(name=tr("Target", lang), options=self._options())
        self.upload.name = tr("Your model: a YAML file and its CSV", lang)
        if self.expr is not None:
            self.expr.param.update(name=tr("U(x) or U(x, y)", lang), placeholder=tr("e.g. x^4 - 2*x^2 + 0.3*x", lang))
            self.box.param.update(name=tr("Box (lo,hi per coordinate)", lang),
                                  placeholder=tr("fitted to the mass, e.g. -10,10,-8,8", lang))
        if self._status is not None:
            self._show_status(*self._status)
        if self._upload_text is not None:
            self._show_upload(*self._upload_text[:2], **self._upload_text[2])

    def _show_status(self, kind: str, text: str) -> None:
        """The typed U's status line: an error (the parser's words, through the catalogue) or ✓ valid."""
        self._status = (kind, text)
        if self.status is not None:
            self.status.object = ("" if not text else error_html(tr_message(text, self.lang)) if kind == "error"
                                  else ok_html(tr(text, self.lang)))

    def _show_upload(self, kind: str, text: str, **fields) -> None:
        self._upload_text = (kind, text, fields)
        words = tr(text, self.lang, **fields) if fields else tr_message(text, self.lang)
        self.upload_status.object = (error_html(words) if kind == "error" else ok_html(words) if kind == "ok"
                                     else html.escape(words))

    def _typed_field(self):
        if self.expr is not None:
            self.expr.visible = self.box.visible = True
            return
        typed = self.cfg.potential.startswith(TYPED)
        self.expr = pn.widgets.TextInput(name=tr("U(x) or U(x, y)", self.lang),
                                         placeholder=tr("e.g. x^4 - 2*x^2 + 0.3*x", self.lang),
                                         value=self.cfg.potential[len(TYPED):] if typed else "x^4 - 2*x^2",
                                         sizing_mode="stretch_width", css_classes=["expr-input"])
        self.status = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["expr-status"], margin=(0, 10))
        self.expr.param.watch(self._on_text, "value_input")
        # the box a typed target is drawn and scored on (a link's box=, the CLI's --box); empty: fitted to its mass
        self.box = pn.widgets.TextInput(name=tr("Box (lo,hi per coordinate)", self.lang), value=self.cfg.box or "",
                                        placeholder=tr("fitted to the mass, e.g. -10,10,-8,8", self.lang),
                                        sizing_mode="stretch_width", css_classes=["box-input"])
        self.box.param.watch(self._on_box, "value")
        self.layout[1:1] = [self.expr, self.status, self.box]

    def _on_box(self, event):
        text = (event.new or "").strip()
        try:
            parse_box(text) if text else None
        except PotentialError as err:
            self._show_status("error", f"Box: {err} (not applied)")
            return
        self._show_status("error", "")
        self.cfg.box = text or None

    def _on_select(self, event):
        if event.new == TYPED:
            self._typed_field()
            self._on_text(None)
        else:
            if self.expr is not None:
                self.expr.visible = self.box.visible = False
                self._show_status("error", "")
            self.lab.block("potential", None)
            self.cfg.param.update(potential=event.new, box=None)   # a typed target's box is not a preset's

    def _on_upload(self, event):
        if not event.new:
            return
        names = self.upload.filename or []
        files = dict(zip(names if isinstance(names, list) else [names],
                         event.new if isinstance(event.new, list) else [event.new]))
        self._show_upload("", N_("building the model…"))

        def done(out):
            if isinstance(out, Failure):
                self._show_upload("error", out.message)
                return
            name = next(n for n in files if n.lower().endswith((".yaml", ".yml")))
            self._show_upload("ok", N_("✓ {name}"), name=name)
            self._uploaded[name] = out
            self.select.options = self._options()
            self.cfg.potential = out
        self.lab.runner.run(partial(read_model_upload, files), done, tag="model upload")

    def _on_text(self, event):
        # on choosing the option there is no keystroke yet: what the field shows is what applies
        text = (event.new if event is not None else self.expr.value) or ""
        text = text.strip()
        if text.startswith(TYPED):      # the spelling of links and the README, pasted in
            text = text[len(TYPED):]
        def checked(reason):
            if reason is not None:
                self._show_status("error", reason.detail)
                return
            self._show_status("ok", N_("✓ valid"))
            self._apply_soon(TYPED + text.strip())
        self.lab.check_typed_potential(text, done=checked)

    def _apply_soon(self, spec: str, delay_ms: int = 350):
        """Apply a valid expression once typing pauses: every valid prefix of what is being typed
        would otherwise rebuild the runs and the figures."""
        self._pending = spec
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            self.cfg.potential = spec
            return

        def apply():
            if self._pending == spec and not self.lab.blocks.get("potential"):
                self.cfg.potential = spec
        doc.add_timeout_callback(apply, delay_ms)

    def _follow(self, event):
        typed = event.new.startswith(TYPED)
        value = TYPED if typed else event.new
        if self.select.value != value:
            self.select.value = value
        if typed:
            self._typed_field()
        if self.expr is None:
            return
        self.box.visible = typed
        if (self.box.value or None) != self.cfg.box:
            self.box.value = self.cfg.box or ""
        # never echo text back into the field while someone types in it: it would eat keystrokes
        typing = (self.expr.value_input or "").strip()
        if typed and typing != event.new[len(TYPED):].strip():
            self.expr.value = event.new[len(TYPED):]
        self.expr.visible = typed

    def _formula(self, _version) -> str:
        pot = self.lab.potential
        return f"${pot.formula}$" if pot is not None and pot.formula else ""

    def _info(self, _version, lang=DEFAULT_LANG) -> str:
        pot = self.lab.potential
        if pot is None:
            return ""
        text = tr("{description} (dimension {dim})", lang, description=tr_message(pot.description, lang), dim=pot.dim)
        return f"<div style='font-size:12px;color:#444'>{html.escape(text)}</div>"

    def __panel__(self):
        return self.layout


def shown_params(sampler: str, overrides: dict) -> dict[str, str]:
    """Every parameter of `sampler` as its field shows it: the override, else the default ('auto' for None)."""
    return {key: str(overrides.get(key, "auto" if d is None else d)) for key, d in default_params(sampler).items()}


class ParamFields(Viewer):
    """Text fields for a sampler's parameters (as `coerce_params` accepts them: numbers, 'auto'...).

    The fields edit `self.values`, one parameter per field; a change of the configuration from
    elsewhere updates them all in one batch, so the check of an edit always sees a whole set of
    values (never one field new and the rest old) and finds nothing to apply."""

    lang = LANG

    def __init__(self, lab: Lab, side: str = "A", folded: bool = False, **params):
        super().__init__(**params)
        self.lab, self.cfg, self.side = lab, lab.config, side
        # folded: the fields are made on a click (sampler B's: the summary says how B's parameters differ from A's,
        # and its fields were a sixth of the first screen's page-open cost)
        self._folded = folded
        self.unfold = pn.widgets.Button(name=tr("Sampler B's parameters…", self.lang), button_type="light",
                                        margin=(0, 10), css_classes=[f"params-unfold-{side.lower()}"])
        self.unfold.on_click(self._unfold)
        self.sampler_key = "sampler" if side == "A" else "sampler_b"
        self.params_key = "params" if side == "A" else "params_b"
        self.grid = pn.GridBox(ncols=2, sizing_mode="stretch_width")
        self.error = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=[f"params-error-{side.lower()}"],
                                  margin=(0, 10))
        self.widgets: dict = {}
        # every sampler's temperature and step-size schedule: most runs keep their defaults, and their three
        # fields are a tenth of a page open's models. Shown on a click, or when set (by a link, say).
        self.more = pn.widgets.Button(name=tr("β and step-size schedule…", self.lang), button_type="light",
                                      margin=(0, 10), css_classes=[f"params-more-{side.lower()}"])
        self.more.on_click(self._show_more)
        self.auto = AutoEpsControl(lab, side, lang=self.lang)      # eps = auto: the step-size ladder picks ε
        self._more = False
        self._showing = False
        self._why = ""
        self._build()
        self.body = pn.Column(*([self.unfold] if folded else [self.grid, self.auto, self.more, self.error]),
                              sizing_mode="stretch_width")
        self.cfg.param.watch(self._build, [self.sampler_key])
        self.cfg.param.watch(self._follow, [self.params_key])
        self.param.watch(self._words, "lang")

    def _words(self, *_) -> None:
        self.more.name = tr("β and step-size schedule…", self.lang)
        self.unfold.name = tr("Sampler B's parameters…", self.lang)
        self.auto.lang = self.lang
        spec = REGISTRY.get(getattr(self.cfg, self.sampler_key))
        for key, widget in self.widgets.items():
            if getattr(widget, "description", None):
                widget.description = tr_message(param_help(key, spec), self.lang)
        self._show_error(self._why)

    def _show_error(self, why: str) -> None:
        self._why = why
        if getattr(self.cfg, self.sampler_key) == DESIGN:
            self.error.object = ("<div style='font-size:12px;color:#444'>" + tr(
                "The design's step size and constants are set in the design editor (the card below the plots).",
                self.lang) + "</div>")
            return
        self.error.object = error_html(tr("{reason} (not applied)", self.lang, reason=tr_message(why, self.lang))
                                       if why else "")

    def _build(self, *_):
        name = getattr(self.cfg, self.sampler_key)
        if name == DESIGN:        # its step size and constants are the design's own, set in its editor
            self.widgets, self.grid.objects = {}, []
            self._show_error("")
            return
        spec = REGISTRY[name]
        overrides = getattr(self.cfg, self.params_key)
        shown = shown_params(name, overrides)
        if self._folded:
            self.widgets, self.grid.objects = {}, []
            self.more.visible = False
            self.error.object = ""
            return
        # a choice that may also be typed (Santa's G1 = expr:...) is a text field, its choices in the tooltip
        picked = {key for key in shown if spec.declared[key].choices and not spec.declared[key].typed}
        fields = {key: param.Selector(default=value, objects=list(spec.declared[key].choices), check_on_set=False)
                  if key in picked else param.String(default=value) for key, value in shown.items()}
        self.values = param.parameterized_class("SamplerParameters", fields)()
        self._more = self._more or any(key in overrides for key in MORE)
        self.widgets = {key: self._widget(key, spec) for key in shown if self._more or key not in MORE}
        self.values.param.watch(self._on_edit, list(shown))
        self.grid.objects = list(self.widgets.values())
        self.more.visible = not self._more
        self._show_error("")

    def _widget(self, key, spec):
        if isinstance(self.values.param[key], param.Selector):
            return pn.widgets.Select.from_param(self.values.param[key], name=key, sizing_mode="stretch_width",
                                                css_classes=[f"param-{key}"])
        # a tooltip is two more models a field, at every page open: beta, the schedule and a typed G1 have one;
        # every field's declaration is in the sampler's notes above them (describe_sampler)
        tip = param_help(key, spec) if key in MORE or spec.declared[key].typed else None
        return pn.widgets.TextInput.from_param(self.values.param[key], name=key, sizing_mode="stretch_width",
                                               css_classes=[f"param-{self.side.lower()}-{key}"],
                                               **({"description": tr_message(tip, self.lang)} if tip else {}))

    def _unfold(self, *_):
        self._folded = False
        self._build()
        self.body.objects = [self.grid, self.auto, self.more, self.error]

    def _show_more(self, *_):
        if not self._more:
            self._more = True
            spec = REGISTRY[getattr(self.cfg, self.sampler_key)]
            self.widgets.update({key: self._widget(key, spec) for key in MORE if key in self.values.param})
            self.grid.objects = list(self.widgets.values())
            self.more.visible = False

    def _on_edit(self, *events):
        name = getattr(self.cfg, self.sampler_key)
        if name == DESIGN or self._showing:
            return
        defaults = default_params(name)
        overrides = {}
        for key in defaults:
            text = str(getattr(self.values, key)).strip()
            d = defaults[key]
            if text in ("", str(d)) or (d is None and text.lower() in ("auto", "none")):
                continue
            overrides[key] = text
        reason = validate_params(name, overrides)
        if reason:
            self._show_error(reason)
            # the fields show what runs (the message quotes what was typed); a typed G1 stays, to be corrected
            self._show(getattr(self.cfg, self.params_key), keep_typed=True)
            return
        self._show_error("")
        if overrides != getattr(self.cfg, self.params_key):
            setattr(self.cfg, self.params_key, overrides)

    def _follow(self, event):
        name = getattr(self.cfg, self.sampler_key)
        if name == DESIGN or self._folded:
            return
        if any(key in event.new for key in MORE):
            self._show_more()
        self._show(event.new)
        self._show_error("")        # what the configuration holds was checked: no refusal stands beside it

    def _show(self, overrides: dict, keep_typed: bool = False):
        """The fields show these overrides (and the defaults), without taking that for an edit."""
        declared = REGISTRY[getattr(self.cfg, self.sampler_key)].declared
        shown = {key: value for key, value in shown_params(getattr(self.cfg, self.sampler_key), overrides).items()
                 if key in self.widgets and not (keep_typed and declared[key].typed)
                 and (not declared[key].choices or declared[key].typed or value in declared[key].choices)}
        self._showing = True
        try:
            self.values.param.update(**shown)
        finally:
            self._showing = False

    def __panel__(self):
        return self.body


def describe_sampler(name: str, lang: str = DEFAULT_LANG) -> str:
    if name == DESIGN:
        return ("<div style='font-size:12px;color:#444'>" + tr(
            "A sampler you write as (H, D, Q): its state, K, D and Q are typed in the design editor below the plots.",
            lang) + "</div>")
    spec = REGISTRY[name]
    params = "".join(f"<li>{html.escape(tr_message(p.describe(), lang))}</li>" for p in spec.declared.values())
    return (f"<details style='font-size:12px;color:#444'><summary>{html.escape(tr_message(spec.source, lang))}"
            f"</summary>{html.escape(tr_message(spec.doc, lang))}"
            f"<ul class='param-notes' style='margin:4px 0;padding-left:18px'>{params}</ul></details>")


class SamplerPicker(Viewer):
    """The registry's samplers (new entries appear by themselves), with their parameters."""

    lang = LANG

    def __init__(self, lab: Lab, side: str = "A", fields_folded: bool | None = None, **params):
        super().__init__(**params)
        self.lab, self.cfg, self.side = lab, lab.config, side
        self.key = "sampler" if side == "A" else "sampler_b"
        self.select = pn.widgets.Select(options=self._options(), value=getattr(self.cfg, self.key),
                                        sizing_mode="stretch_width", css_classes=[f"sampler-select-{side.lower()}"],
                                        stylesheets=[HEADING_LABEL])
        self.doc = pn.pane.HTML(pn.bind(describe_sampler, self.cfg.param[self.key], self.param.lang),
                                sizing_mode="stretch_width", margin=(0, 10))
        self.fields = ParamFields(lab, side, folded=side == "B" if fields_folded is None else fields_folded,
                                  lang=self.lang)
        self._words()
        # a new sampler A starts from its own recipe and parameters: one update of several settings
        self.select.param.watch(self._on_select, "value")
        self.cfg.param.watch(self._follow, [self.key])
        self.param.watch(self._words, "lang")

    def _options(self) -> dict:
        options = {tr_message(sampler_label(n), self.lang): n for n in samplers()}
        options[tr("Your design (H, D, Q)", self.lang)] = DESIGN
        return options

    def _words(self, *_) -> None:
        self.select.param.update(name=tr("Sampler" if self.side == "A" else "Sampler B", self.lang),
                                 options=self._options())
        self.fields.lang = self.lang

    def _on_select(self, event):
        if getattr(self.cfg, self.key) == event.new:
            return
        if self.side == "A":
            self.cfg.param.update(sampler=event.new, params={}, D=None, Q=None, naive=None)
        else:
            self.cfg.param.update(sampler_b=event.new, params_b={})

    def _follow(self, event):
        self.select.value = event.new

    def __panel__(self):
        return pn.Column(self.select, self.doc, self.fields, sizing_mode="stretch_width")


class RunControls(Viewer):
    """Play, pause, single step, reset; speed, chains, seed, gradient noise, burn-in."""

    lang = LANG

    def __init__(self, lab: Lab, **params):
        super().__init__(**params)
        self.lab, self.cfg = lab, lab.config
        state = (lab.param.playing, lab.param.blocks, lab.param.version, self.param.lang)
        noise = (lab.param.version, self.cfg.param.batch)
        self.play = play_button(self._play_state, state, "play-button")
        self.step = pn.widgets.Button(name=tr("Step", self.lang), button_type="default", css_classes=["step-button"],
                                      width=70, disabled=pn.bind(lambda *_: not lab.can_run, *state))
        self.reset = pn.widgets.Button(name=tr("Reset", self.lang), button_type="default", css_classes=["reset-button"],
                                       width=70)
        self.play.on_click(self._toggle)
        self.step.on_click(lambda e: lab.step(1))
        self.reset.on_click(lambda e: lab.reset())
        self._speed = None
        self.limit = pn.pane.HTML(pn.bind(self._limit_text, lab.param.speed_limit, self.param.lang),
                                  sizing_mode="stretch_width", css_classes=["speed-limit"], margin=(0, 10))
        # bounds are LabConfig's, checked by `settings`; the browser's own (start, end) would clamp without a word
        self.settings = settings = SettingFields(self.cfg, "settings-error", self.lang)
        # a number field, not a slider: the slider's handle has no accessible name (axe-core: aria-input-field-name)
        self.speed_field = settings.field(pn.widgets.IntInput, "speed", sizing_mode="stretch_width",
                                          css_classes=["speed-input"])
        self.chains = settings.field(pn.widgets.IntInput, "chains", step=100, sizing_mode="stretch_width",
                                     css_classes=["chains-input"])
        self.seed = settings.field(pn.widgets.IntInput, "seed", sizing_mode="stretch_width", css_classes=["seed-input"])
        self.V = settings.field(pn.widgets.FloatInput, "V", step=0.5, sizing_mode="stretch_width",
                                css_classes=["v-input"], disabled=pn.bind(self._minibatch, *noise))
        self.burn = settings.field(pn.widgets.IntInput, "burn", step=50, sizing_mode="stretch_width",
                                   css_classes=["burn-input"])
        self.start = pn.widgets.Select.from_param(self.cfg.param.start, name="Chains start",
                                                  options={"near the start point": "near",
                                                           "at exact draws of the target": "exact"},
                                                  sizing_mode="stretch_width", css_classes=["start-select"])
        self.dtype = pn.widgets.Select.from_param(self.cfg.param.dtype, sizing_mode="stretch_width",
                                                  css_classes=["dtype-select"])
        self.noise = pn.widgets.RadioButtonGroup(options={"simulated noise V": "simulated",
                                                          "real minibatches": "minibatches"},
                                                 value="minibatches" if self.cfg.batch else "simulated",
                                                 sizing_mode="stretch_width",
                                                 visible=pn.bind(self._data, lab.param.version))
        self.batch = pn.widgets.IntInput(name=self.cfg.param.batch.label, value=self.cfg.batch or 10,
                                         sizing_mode="stretch_width", visible=pn.bind(self._minibatch, *noise),
                                         css_classes=["batch-input"], stylesheets=[NO_SPIN])
        pn.bind(self._on_noise, self.noise, self.batch, watch=True)
        self._words()
        self.param.watch(self._words, "lang")

    def _words(self, *_) -> None:
        lang = self.lang
        self.step.name, self.reset.name = tr("Step", lang), tr("Reset", lang)
        self.settings.relabel(lang)
        self.start.param.update(name=tr("Chains start", lang), options={
            tr("near the start point", lang): "near", tr("at exact draws of the target", lang): "exact"})
        self.dtype.param.update(name=tr(self.cfg.param.dtype.label, lang),
                                description=tr_message(self.cfg.param.dtype.doc, lang))
        self.start.description = tr_message(self.cfg.param.start.doc, lang)
        self.noise.options = {tr("simulated noise V", lang): "simulated", tr("real minibatches", lang): "minibatches"}
        self.batch.name = tr(self.cfg.param.batch.label, lang)
        if self._speed is not None:
            self._speed.name = tr("Speed (steps per frame)", lang)

    @property
    def speed(self):
        """The speed as a slider (a lesson's demo shows it; the lab shows `speed_field`)."""
        if self._speed is None:
            self._speed = pn.widgets.IntSlider.from_param(self.cfg.param.speed,
                                                          name=tr("Speed (steps per frame)", self.lang),
                                                          start=1, end=200, sizing_mode="stretch_width")
        return self._speed

    def _play_state(self, playing, *_) -> dict:
        return dict(name=tr("Pause" if playing else "Play", self.lang), button_type="warning" if playing else "success",
                    disabled=not playing and not self.lab.can_run)

    @staticmethod
    def _limit_text(limit, lang=DEFAULT_LANG) -> str:
        if limit is None:
            return ""
        return ("<div style='font-size:12px;color:#664d03'>" + tr(
            "running at most {steps} steps per frame: one session may use {ms} ms of the server per frame (fewer "
            "chains go faster)", lang, steps=max(1, limit), ms=f"{FRAME_BUDGET_S * 1e3:.0f}") + "</div>")

    def _data(self, *_) -> bool:
        return self.lab.potential is not None and self.lab.potential.data is not None

    def _minibatch(self, *_) -> bool:
        return self._data() and self.cfg.batch is not None

    def _toggle(self, event):
        if self.lab.playing:
            self.lab.pause()
        else:
            self.lab.play()

    def _on_noise(self, noise, batch):
        if noise != "minibatches":
            self.cfg.batch = None
        elif batch is None:      # an emptied field (None is the simulated noise): it shows the size in use
            self.settings.show(self.batch, self.cfg.batch or 10)
        else:
            self.settings.typed(self.batch, "batch", batch)

    def __panel__(self):
        # Play, Step and Reset head the plots (LabView's bar): in reach at any width and in presentation mode
        return pn.Column(self.speed_field, self.limit,
                         pn.Row(self.chains, self.seed, sizing_mode="stretch_width"),
                         pn.Row(self.V, self.burn, sizing_mode="stretch_width"), self.start, self.dtype, self.noise,
                         self.batch,
                         self.settings.message, sizing_mode="stretch_width")


class CompareControls(Viewer):
    """Side-by-side mode: two samplers on the same potential, seed and gradient noise."""

    lang = LANG

    def __init__(self, lab: Lab, **params):
        super().__init__(**params)
        self.lab, self.cfg = lab, lab.config
        self.pairs = {p.key: p for p in compare_pairs()}
        self.toggle = pn.widgets.Switch.from_param(self.cfg.param.compare, name="Compare",
                                                   css_classes=["compare-switch"])
        self.pair = pn.widgets.Select(options=self._options(), value="", sizing_mode="stretch_width",
                                      css_classes=["pair-select"])
        self.heading = pn.pane.HTML("", margin=(8, 10))
        pn.bind(self._on_pair, self.pair, watch=True)
        self._follow_pair()
        self.cfg.param.watch(self._follow_pair, ["compare", "sampler", "sampler_b", "params", "params_b", "potential",
                                                 "V", "D", "Q", "naive", "log_view", "batch", "start"])
        # sampler B's picker and fields are a tenth of a first screen's page-open cost, below the fold, and the pair
        # picker heading the plots sets both samplers: a button names B and makes them on a click (at once where
        # B's eps is auto: its ladder runs from there)
        self.picker_b = None
        self.open_b = pn.widgets.Button(button_type="light", sizing_mode="stretch_width", margin=(0, 10),
                                        css_classes=["sampler-b-open"])
        self.open_b.on_click(self._open_b)
        self.body = pn.Column(visible=self.cfg.param.compare, sizing_mode="stretch_width")
        self._show_b()
        self.cfg.param.watch(self._show_b, ["compare", "sampler_b", "params_b"])
        self._words()
        self.param.watch(self._words, "lang")

    def _options(self) -> dict:
        options = {tr("choose a pair…", self.lang): ""}
        options.update({tr_message(p.label, self.lang): p.key for p in self.pairs.values()})
        return options

    def _words(self, *_) -> None:
        self.pair.param.update(name=tr("Preset pair", self.lang), options=self._options())
        self.toggle.name = tr("Compare", self.lang)
        self.heading.object = f"<b>{tr('Compare two samplers', self.lang)}</b>"
        if self.picker_b is not None:
            self.picker_b.lang = self.lang
        self._name_b()

    def _name_b(self) -> None:
        name = self.cfg.sampler_b
        label = (tr("Your design (H, D, Q)", self.lang) if name == DESIGN
                 else tr_message(sampler_label(name), self.lang) if name in REGISTRY else name)
        self.open_b.name = tr("Sampler B: {sampler}; change it or its parameters…", self.lang, sampler=label)

    def _show_b(self, *_):
        if self.picker_b is not None or not self.cfg.compare:
            return
        if wants_auto(self.cfg.params_b):
            self._open_b(fields_folded=True)
        else:
            self._name_b()
            if not self.body.objects:
                self.body.objects = [self.open_b]

    def _open_b(self, *_, fields_folded: bool = False):
        if self.picker_b is None:
            self.picker_b = SamplerPicker(self.lab, "B", fields_folded=fields_folded, lang=self.lang)
            self.body.objects = [self.picker_b]

    def _matches(self, pair) -> bool:
        cfg = self.cfg
        return (cfg.compare and (cfg.sampler, cfg.sampler_b) == (pair.a, pair.b)
                and cfg.params == dict(pair.params) and cfg.params_b == dict(pair.params_b)
                and pair.potential in (None, cfg.potential) and pair.V in (None, cfg.V)
                and (cfg.D, cfg.Q, cfg.naive) == (None, None, None)
                and (cfg.log_view, cfg.batch, cfg.start) == (pair.log_view, pair.batch, pair.start))

    def _follow_pair(self, *_):
        """The picker names the pair on show, or none once anything of it is changed."""
        key = next((k for k, p in self.pairs.items() if self._matches(p)), "")
        if self.pair.value != key:
            self.pair.value = key

    def _on_pair(self, key):
        pair = self.pairs.get(key)
        if pair is None or self._matches(pair):
            return
        upd = dict(compare=True, sampler=pair.a, sampler_b=pair.b, params=dict(pair.params),
                   params_b=dict(pair.params_b), D=None, Q=None,
                   naive=None, log_view=pair.log_view, batch=pair.batch, start=pair.start)
        if pair.potential:
            upd["potential"] = pair.potential
        if pair.V is not None:
            upd["V"] = pair.V
        self.cfg.param.update(**upd)

    def __panel__(self):
        # the preset pair's picker heads the plots (LabView's bar)
        return pn.Column(pn.Row(self.heading, self.toggle),
                         self.body, sizing_mode="stretch_width")
