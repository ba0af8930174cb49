"""app/views/bokeh_speedups.py: Bokeh's serialisation query, cheaper and with the same results."""
import numpy as np
import panel as pn
import pytest
from bokeh.core.has_props import HasProps
from bokeh.core.property.descriptors import UnsetValueError
from bokeh.document import Document
from bokeh.models import Slider
from panel.io.state import set_curdoc

from app.views import bokeh_speedups as bs
from app.views.page import AppView

original = bs.ORIGINAL["query_properties_with_values"]


def test_the_installed_bokeh_is_the_reviewed_one():
    """If this fails, Bokeh changed the functions: read the new ones, then update or drop the module."""
    assert bs.install() and bs.installed()
    assert HasProps._overridden_defaults() == bs.ORIGINAL["_overridden_defaults"](HasProps)


def same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b, equal_nan=True)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("query", ["", "?cmp=1&sb=sghmc-naive&recipe=1", "?pot=banana&s=sgrld", "?tab=lessons",
                                   "?tab=figures"])
def test_every_model_of_a_page_serialises_as_bokeh_would(query):
    doc = Document()
    with set_curdoc(doc):
        doc.add_root(pn.panel(AppView(query)).get_root(doc))
    models = list(doc.models)
    assert len(models) > 20
    serialized = lambda prop: prop.serialized      # noqa: E731 (Bokeh's own query)
    for m in models:
        for defaults in (False, True):
            # the replacement first: Bokeh's own computes every default, which must not be what makes them agree
            got = bs.query_properties_with_values(m, serialized, include_defaults=defaults)
            want = original(m, serialized, include_defaults=defaults)
            assert want.keys() == got.keys(), (m, defaults, want.keys() ^ got.keys())
            assert all(same(want[k], got[k]) for k in want), m


def test_an_unset_required_property_still_refuses_to_serialise():
    s = Slider(start=0, end=1, step=0.1, title="x")     # value is required and unset
    for fn in (original, bs.query_properties_with_values):
        with pytest.raises(UnsetValueError):
            fn(s, lambda prop: prop.serialized, include_defaults=False)


def test_every_default_of_a_page_is_what_bokeh_would_make():
    doc = Document()
    with set_curdoc(doc):
        doc.add_root(pn.panel(AppView("?cmp=1&sb=sghmc-naive&recipe=1")).get_root(doc))
    classes = {type(m) for m in doc.models}
    kept = 0
    for cls in classes:
        for name in cls.properties():
            prop = cls.lookup(name).property
            for _ in range(2):         # the second read is the kept value, where one is kept
                got = bs.themed_default(prop, cls, name, None)
                want = bs.ORIGINAL["themed_default"](prop, cls, name, None)
                # plain values must be equal; others (new models, lists) are made afresh by both
                assert same(got, want) if type(want) in bs.IMMUTABLE else type(got) is type(want), (cls, name)
            kept += (id(prop), cls, name, False) in bs._defaults
    assert kept > 500          # the test's own power: most defaults are plain values, and were kept
