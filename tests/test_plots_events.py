"""app/views/plots.py's `set_columns` and `stream_columns` against Bokeh's own `source.data.update(cols)` and
`source.stream(new, rollover)`: a lab's frames, played twice from the same seed, leave the same held events (kind,
model, columns, values, rollover, order) in the document and the same data in the sources, whichever makes them.
"""
import time

import numpy as np
import pytest
from bokeh.models import ColumnDataSource
from lab_frames import held_tick, playing_lab

from app.views import plots


def bokeh_set_columns(source, cols):
    source.data.update(cols)


def bokeh_stream_columns(source, new, rollover):
    source.stream(new, rollover)


def comparable(value):
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.tobytes())
    if isinstance(value, (list, tuple)):
        return [comparable(v) for v in value]
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, float):
        return value.hex()
    return value


def described(event, names: dict):
    """An event as the page gets it: its kind, its model (by the order models were first met), and what it carries."""
    model = names.setdefault(event.model.id, len(names)) if getattr(event, "model", None) is not None else None
    carried = {key: comparable(getattr(event, key)) for key in ("attr", "cols", "rollover", "new")
               if hasattr(event, key)}
    if carried.get("cols") is not None:      # Bokeh's `data.update` names them from a set: in no order
        carried["cols"] = sorted(carried["cols"])
    if type(event).__name__ == "ColumnsStreamedEvent":
        carried["data"] = comparable(dict(event.data))
    return type(event).__name__, model, carried


def frames(query: str, n: int, monkeypatch) -> tuple[list, list]:
    clock = [1000.0]
    # every clock the lab and the frame loop read: a frame's steps and the numbers' refreshes then do not depend on
    # how long a frame took (on a busy machine the two plays would step differently)
    for name in ("monotonic", "perf_counter", "thread_time", "process_time"):
        monkeypatch.setattr(time, name, lambda: clock[0])
    _, doc, loop = playing_lab(query)
    names: dict = {}
    out = []
    for _ in range(n):
        clock[0] += 0.1
        out.append([described(e, names) for e in held_tick(doc, loop)])
    sources = [comparable(dict(m.data)) for m in sorted(doc.models, key=lambda m: names.get(m.id, -1))
               if isinstance(m, ColumnDataSource) and m.id in names]
    return out, sources


@pytest.mark.parametrize("query", ["?pot=double-well&s=sghmc&cmp=1&sb=sghmc-naive&n=200",
                                   "?pot=banana&s=sghmc&n=200"])
def test_a_frame_s_column_events_are_bokeh_s_own(query, monkeypatch):
    ours, our_data = frames(query, 25, monkeypatch)
    monkeypatch.setattr(plots, "set_columns", bokeh_set_columns)
    monkeypatch.setattr(plots, "stream_columns", bokeh_stream_columns)
    bokehs, bokeh_data = frames(query, 25, monkeypatch)
    kinds = {kind for events in ours for kind, _, _ in events}
    # the test's power: both kinds of column change met, beside a property's new value in the same hold
    assert {"ColumnsStreamedEvent", "ColumnDataChangedEvent", "ModelChangedEvent"} <= kinds, kinds
    assert ours[-1] != ours[-2]         # each frame carries its own values: a frame's events tell frames apart
    assert ours == bokehs
    assert our_data == bokeh_data
