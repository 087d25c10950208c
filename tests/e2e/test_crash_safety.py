"""Crash safety of the local engine: SIGKILL at random moments loses no run, leaves none stuck,
and repeats no idempotent effect (the engine as a real process on a real PostgreSQL).

Set SWITCHYARD_CHAOS_SEED to replay a failing schedule of kills; `benchmarks/chaos.py` runs the
same at hundreds of kills.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.e2e.engine_chaos import ChaosConfig, run_chaos
from tests.pg import fresh_database


def test_the_engine_killed_at_random_moments_completes_every_run_once(tmp_path: Path) -> None:
    seed = os.environ.get("SWITCHYARD_CHAOS_SEED")
    config = ChaosConfig(runs=48, kills=22, seed=int(seed) if seed else None)
    with fresh_database() as conninfo:
        report = run_chaos(conninfo, config, tmp_path)
    print(report.summary())
    assert report.kills >= 20
    assert report.lost == [], report.summary()
    assert report.not_succeeded == {}, report.summary()
    assert report.duplicated == {}, report.summary()
    assert report.missing_effects == [] and report.wrong_outputs == [], report.summary()
    assert report.leftovers == {}, report.summary()
    assert report.stalls == 0, report.summary()
