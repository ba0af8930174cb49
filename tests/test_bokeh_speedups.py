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
