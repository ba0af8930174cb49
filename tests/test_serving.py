"""A probe session beside each hostile link of issue 16 (and the first Models open of issue 28), and beside one
user's several heavy tabs (issue 28's mixes: the compute pool), on one server process.

These measure frame rates, so CI runs them on their own after the rest of the suite (marker
`serving`, see .ci/run): beside the browser tests' Chromium the machine's two cores are not the
server's. The same measurement, with longer windows and the longest gap, is benchmarks/hostile_links.py.
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from benchmarks.hostile_links import MIXES, measure, measure_mixes
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


@pytest.fixture(scope="module")
def mixes():
    server = AppServer().wait()
    try:
        rows = asyncio.run(measure_mixes(server, SimpleNamespace(seconds=5.0, settle=45.0, only="")))
    finally:
        server.stop()
    return {row[0]: row for row in rows}, server.server_errors()


LAB_STEPS_ON_THE_LOOP = pytest.mark.xfail(
    strict=False, reason="a data posterior's lab frames still run on the event loop: pacing bounds their share, "
                         "not a probe's wait behind one (docs/notes/compute-pool.md)")


@pytest.mark.parametrize("name", [pytest.param(m[0], marks=LAB_STEPS_ON_THE_LOOP) if "data posterior" in m[0]
                                  else m[0] for m in MIXES if "LDA" not in m[0]])
def test_one_users_heavy_tabs_leave_the_probe_at_0_8_of_its_rate(mixes, name):
    """Three heavy lab or Models tabs, or four tabs pressing the ladder: the probe's rate beside them over its
    rate alone just before and after (issue 28: 0.38x, 0.42x before the compute pool)."""
    rows, _ = mixes
    assert rows[name][1] >= 0.8, rows[name]


@pytest.mark.parametrize("name", [m[0] for m in MIXES])
def test_a_closed_tabs_work_stops(mixes, name):
    """Once the tabs have closed, the server and its workers use what they used before the tabs opened (the DP
    mixture's steps went on after its tab closed, 0.36 of a core)."""
    rows, _ = mixes
    _, _, closed_cpu, idle, *_ = rows[name]
    assert closed_cpu <= idle + 0.15, rows[name]


def test_memory_comes_back_after_six_lda_seeds_close(mixes):
    """Six Reuters LDA seeds took a process from 316 to 1247 MB and it kept 730 MB after they closed (issue 28)."""
    rows, _ = mixes
    name = next(m[0] for m in MIXES if "LDA" in m[0])
    _, _, _, _, start, closed, *_ = rows[name]     # (name, ratio, cpu, idle, MB before, MB after, ...)
    assert closed - start <= 100, rows[name]


def test_no_traceback_beside_the_mixes(mixes):
    _, errors = mixes
    assert not errors, errors
