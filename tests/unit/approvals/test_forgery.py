"""The forgery benchmark, small: forged, bit-flipped, truncated, expired and replayed links and
Slack requests are all refused, while a genuine link and a genuine Slack request are accepted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "approvals_forgery.py"


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("approvals_forgery", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["approvals_forgery"] = module
    spec.loader.exec_module(module)
    return module


def test_no_forged_expired_or_replayed_attempt_is_accepted(pg_conninfo: str) -> None:
    report = _benchmark().run(500, pg_conninfo)
    assert report.tried >= 500
    assert all(tally.tried > 0 for tally in report.tallies.values())
    assert report.accepted == 0, "\n".join(report.lines())
    assert report.controls_accepted == 2  # the harness does accept what is genuine
