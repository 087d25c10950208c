"""The contract between compiled state machines and the code they call.

What a Task sends to `functions/*`, what comes back, the Step Functions error names that `Retry`
and `Catch` rules match, the JSON the machine carries between states, and the placeholders that CDK
and the local engine fill. docs/contract.md explains it with examples.
"""

from switchyard.contract.continuation import (
    CONTINUE_KEY,
    CONTINUED_KEY,
    Continuation,
    ContinuedTo,
    continuation_of,
    continued_to,
)
from switchyard.contract.errors import (
    LAMBDA_SERVICE_ERRORS,
    StepErrorName,
    error_names_for,
    error_type_of,
)
from switchyard.contract.payloads import (
    PARENT_LINK_KEY,
    PRIORITY_KEY,
    RESET_KEY,
    DeadLetter,
    EnclosingBudget,
    GateDecision,
    GateKind,
    GateRequest,
    HumanRequest,
    ParentLink,
    RenderRequest,
    RenderResult,
    ResetFrom,
    RunContext,
    RunStartRequest,
    RunStartResult,
    StepContext,
    StepInvocation,
    StepResult,
    Usage,
    WorkflowInfo,
    loop_output,
)
from switchyard.contract.resources import (
    DEAD_LETTER_QUEUE_URL,
    FUNCTIONS,
    FunctionName,
    function_placeholder,
    placeholders_in,
    state_machine_placeholder,
)
from switchyard.contract.state import (
    LARGE_OUTPUT_BYTES,
    OUTPUT_REF_KEY,
    STATE_KEYS,
    StepStatus,
)

__all__ = [
    "CONTINUED_KEY",
    "CONTINUE_KEY",
    "DEAD_LETTER_QUEUE_URL",
    "FUNCTIONS",
    "LAMBDA_SERVICE_ERRORS",
    "LARGE_OUTPUT_BYTES",
    "OUTPUT_REF_KEY",
    "PARENT_LINK_KEY",
    "PRIORITY_KEY",
    "RESET_KEY",
    "STATE_KEYS",
    "Continuation",
    "ContinuedTo",
    "DeadLetter",
    "EnclosingBudget",
    "FunctionName",
    "GateDecision",
    "GateKind",
    "GateRequest",
    "HumanRequest",
    "ParentLink",
    "RenderRequest",
    "RenderResult",
    "ResetFrom",
    "RunContext",
    "RunStartRequest",
    "RunStartResult",
    "StepContext",
    "StepErrorName",
    "StepInvocation",
    "StepResult",
    "StepStatus",
    "Usage",
    "WorkflowInfo",
    "continuation_of",
    "continued_to",
    "error_names_for",
    "error_type_of",
    "function_placeholder",
    "loop_output",
    "placeholders_in",
    "state_machine_placeholder",
]
