"""The EventBridge event Step Functions sends when an execution's status changes.

Sent to the account's default bus for every Standard execution: `RUNNING` when it starts (and
when a redrive starts it again), then `SUCCEEDED`, `FAILED`, `TIMED_OUT` or `ABORTED`
(`PENDING_REDRIVE` while a redrive is being set up). Best-effort delivery, in no guaranteed
order. Shape: https://docs.aws.amazon.com/step-functions/latest/dg/eventbridge-integration.html
("Step Functions Execution Status Change"), e.g.

    {"version": "0", "id": "315c1398-...", "detail-type": "Step Functions Execution Status Change",
     "source": "aws.states", "account": "123456789012", "time": "2026-02-26T19:42:21Z",
     "region": "us-east-1", "resources": ["arn:aws:states:...:execution:machine:run-1"],
     "detail": {"executionArn": "arn:aws:states:...:execution:machine:run-1",
                "stateMachineArn": "arn:aws:states:...:stateMachine:machine",
                "name": "run-1", "status": "SUCCEEDED", "startDate": 1551225271984,
                "stopDate": 1551225272215, "input": "{}", "inputDetails": {"included": true},
                "output": "{}", "outputDetails": {"included": true}, "error": null,
                "cause": null, "redriveCount": 0}}

Only the execution's ARN, status and redrive count are read: the recorder takes everything else
from the execution's history, which is complete and ordered (the event may drop a large input or
output, and events may arrive late or twice).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DETAIL_TYPE = "Step Functions Execution Status Change"
SOURCE = "aws.states"
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})

ExecutionStatus = Literal[
    "RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE"
]


class ExecutionStatusDetail(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    execution_arn: str = Field(
        alias="executionArn", pattern=r"^arn:[a-z-]+:states:[a-z0-9-]+:\d{12}:execution:[^:]+:.+$"
    )
    state_machine_arn: str = Field(alias="stateMachineArn")
    name: str
    status: ExecutionStatus
    redrive_count: int = Field(default=0, alias="redriveCount", ge=0)


class ExecutionStatusChange(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    source: Literal["aws.states"]
    detail_type: Literal["Step Functions Execution Status Change"] = Field(alias="detail-type")
    detail: ExecutionStatusDetail

    @property
    def terminal(self) -> bool:
        return self.detail.status in TERMINAL
