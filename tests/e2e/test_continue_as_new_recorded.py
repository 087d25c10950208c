"""A run that continues as new, deployed: on moto's Step Functions, its segments recorded by
the real recorder (from each execution's history, as on AWS) get the run records the local
engine writes for the same run, and read back as one run with three segments."""

from __future__ import annotations

import json
import logging
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from switchyard.contract import continued_to
from switchyard.records.recorder import Recorder
from switchyard.records.segments import logical_run
from tests.e2e.test_recorder_on_moto import (
    Records,
    _answer,
    assert_same_records,
    deliver_in_order,
    read_records,
)
from tests.pg import fresh_database
from tests.scenarios.harness.moto_runner import create_machines, moto_step_functions
from tests.scenarios.test_continue_as_new import Seen, _moto_end, _scenario, run_on_engine


def _segments_on_moto(sfn: Any, arn: str, data: dict[str, Any], name: str = "run-can") -> list[str]:
    execution = sfn.start_execution(stateMachineArn=arn, name=name, input=json.dumps(data))[
        "executionArn"
    ]
    statuses = []
    while execution:
        described = _moto_end(sfn, execution)
        statuses.append(described["status"])
        handed = continued_to(json.loads(described.get("output") or "null"))
        execution = handed["execution_arn"] if handed else ""
    return statuses


def _without_arns(records: Records) -> Records:
    """The records with the next segment's ARN in a hand-over replaced (an account and a
    machine name of its own on moto and on the engine)."""
    for record in records.runs.values():
        handed = continued_to(record["output"])
        if handed is not None:
            handed["execution_arn"] = "(the next segment)"
    return records


@pytest.mark.slow
def test_a_continued_runs_deployed_records_equal_the_engines() -> None:
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    scenario = _scenario()
    with fresh_database() as local, fresh_database() as deployed:
        run_on_engine(local, scenario)
        with (
            moto_step_functions(Seen(scenario.script)) as sfn,
            ConnectionPool(deployed, min_size=1, max_size=4, kwargs={"autocommit": True}) as pool,
        ):
            arn = create_machines(sfn, [], scenario.workflow)
            assert _segments_on_moto(sfn, arn, scenario.input) == ["SUCCEEDED"] * 3
            recorder = Recorder(pool, sfn)
            deliver_in_order(sfn, lambda event: _answer(recorder, event))
        engine, recorded = read_records(local), read_records(deployed)
        assert sorted(recorded.runs) == ["run-can", "run-can-2", "run-can-3"]
        assert [recorded.runs[r]["status"] for r in sorted(recorded.runs)] == [
            "continued",
            "continued",
            "succeeded",
        ]
        assert_same_records(_without_arns(engine), _without_arns(recorded))
        with psycopg.connect(deployed) as conn:
            run = logical_run(conn, "run-can-2")
        assert run is not None and run.run_id == "run-can"
        assert [(s.number, s.continued_from) for s in run.segments] == [
            (1, None),
            (2, "run-can"),
            (3, "run-can-2"),
        ]
        assert run.cost_usd == sum(r["cost_usd"] for r in recorded.runs.values())
