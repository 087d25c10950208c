"""An agent that continues as new, deployed: on moto's Step Functions with the real agent
runtime, its segments recorded by the real recorder (from each execution's history, as on AWS)
get the run records the local engine writes for the same run, one run of three segments whose
cost is theirs together."""

from __future__ import annotations

import logging

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from switchyard.records.recorder import Recorder
from switchyard.records.segments import logical_run
from tests.e2e.test_continue_as_new_recorded import _segments_on_moto, _without_arns
from tests.e2e.test_recorder_on_moto import (
    _answer,
    assert_same_records,
    deliver_in_order,
    read_records,
)
from tests.pg import fresh_database
from tests.scenarios.harness.moto_runner import create_machines, moto_step_functions
from tests.scenarios.test_agent_continue_as_new import RealAgent, _scenario, run_on_engine


@pytest.mark.slow
def test_a_continued_agents_deployed_records_equal_the_engines() -> None:
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    scenario = _scenario()
    with fresh_database() as local, fresh_database() as deployed:
        run_on_engine(local, scenario)
        with (
            moto_step_functions(RealAgent(scenario.script)) as sfn,
            ConnectionPool(deployed, min_size=1, max_size=4, kwargs={"autocommit": True}) as pool,
        ):
            arn = create_machines(sfn, [], scenario.workflow)
            statuses = _segments_on_moto(sfn, arn, scenario.input, name="run-agent")
            assert statuses == ["SUCCEEDED"] * 3
            recorder = Recorder(pool, sfn)
            deliver_in_order(sfn, lambda event: _answer(recorder, event))
        engine, recorded = read_records(local), read_records(deployed)
        assert sorted(recorded.runs) == ["run-agent", "run-agent-2", "run-agent-3"]
        assert_same_records(_without_arns(engine), _without_arns(recorded))
        with psycopg.connect(deployed) as conn:
            run = logical_run(conn, "run-agent-3")
        assert run is not None and run.run_id == "run-agent"
        assert [s.status for s in run.segments] == ["continued", "continued", "succeeded"]
        spent = [r["cost_usd"] for r in recorded.runs.values()]
        assert all(cost > 0 for cost in spent) and run.cost_usd == sum(spent)
        # the agent's record is its answer, in the last segment
        final = recorded.runs["run-agent-3"]["output"]
        assert final == {"answer": "anvils are heavy", "prep": "notes"}
