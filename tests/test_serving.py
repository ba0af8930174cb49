"""A probe session beside each hostile link of issue 16 (and the first Models open of issue 28), on one server
process.

These measure frame rates, so CI runs them on their own after the rest of the suite (marker
`serving`, see .ci/run): beside the browser tests' Chromium the machine's two cores are not the
server's. The same measurement, with longer windows and the longest gap, is benchmarks/hostile_links.py.
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from benchmarks.hostile_links import measure
from tests.app_browser_support import AppServer

pytestmark = pytest.mark.serving


@pytest.fixture(scope="module")
def rows():
    server = AppServer().wait()
    try:
        rows = asyncio.run(measure(server, SimpleNamespace(seconds=5.0, only="")))
    finally:
        server.stop()
    return rows, server.server_errors()


def test_each_hostile_link_leaves_the_probe_at_15_updates_per_second(rows):
    rows, _ = rows
    assert len(rows) == 11
    slow = [(link[:60], round(rate, 1)) for link, rate, *_ in rows if rate < 15]
    assert not slow, slow


def test_a_slow_d_cell_is_refused_within_five_seconds_while_the_probe_plays(rows):
    rows, _ = rows
    link, rate, gap, cpu, alert_s = rows[-1]
    assert link.startswith("D=")
    assert alert_s is not None and alert_s < 5.0, alert_s
    assert rate >= 15


def test_no_traceback_in_the_server_log(rows):
    _, errors = rows
    assert not errors, errors
