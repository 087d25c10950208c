"""Pure ASL evaluation primitives: paths, templates, intrinsics, Choice rules, Retry/Catch, Wait
timing and definition parsing, each with Step Functions' semantics and error names.

No I/O, no clocks, no threads: the durable interpreter supplies the time, the randomness and the
state, and turns the outcomes returned here into history events.
"""

from switchyard.engine.asl.choice_rules import Choice, ChoiceRuleError, Rule, choose
from switchyard.engine.asl.context_object import ExecutionContext, MapItem, format_timestamp
from switchyard.engine.asl.definition import (
    DefinitionProblem,
    InvalidDefinitionError,
    parse_definition,
)
from switchyard.engine.asl.errors import AslFailure, InvalidPathError, StatesError, to_json_text
from switchyard.engine.asl.intrinsic_parser import IntrinsicSyntaxError, parse_intrinsic
from switchyard.engine.asl.intrinsics import Entropy, evaluate_intrinsic
from switchyard.engine.asl.jsonpath import (
    JsonPath,
    PathNotFoundError,
    QueryPath,
    ReferencePath,
    compile_context_path,
    compile_path,
    compile_reference_path,
)
from switchyard.engine.asl.payload_template import PayloadTemplate, TemplateError
from switchyard.engine.asl.result_path import (
    apply_input_path,
    apply_output_path,
    apply_result_path,
)
from switchyard.engine.asl.retry_catch import (
    Catcher,
    CatchTo,
    FailureOutcome,
    JitterStrategy,
    Retrier,
    RetryAfter,
    Unhandled,
    error_matches,
    handle_failure,
)
from switchyard.engine.asl.states import Choice as ChoiceState
from switchyard.engine.asl.states import (
    Fail,
    Map,
    Parallel,
    Pass,
    State,
    StateMachine,
    Succeed,
    Task,
    Wait,
)
from switchyard.engine.asl.timestamps import Timestamp, parse_timestamp
from switchyard.engine.asl.wait_time import WaitSpec, resolve_seconds, wait_until

__all__ = [
    "AslFailure",
    "CatchTo",
    "Catcher",
    "Choice",
    "ChoiceRuleError",
    "ChoiceState",
    "DefinitionProblem",
    "Entropy",
    "ExecutionContext",
    "Fail",
    "FailureOutcome",
    "IntrinsicSyntaxError",
    "InvalidDefinitionError",
    "InvalidPathError",
    "JitterStrategy",
    "JsonPath",
    "Map",
    "MapItem",
    "Parallel",
    "Pass",
    "PathNotFoundError",
    "PayloadTemplate",
    "QueryPath",
    "ReferencePath",
    "Retrier",
    "RetryAfter",
    "Rule",
    "State",
    "StateMachine",
    "StatesError",
    "Succeed",
    "Task",
    "TemplateError",
    "Timestamp",
    "Unhandled",
    "Wait",
    "WaitSpec",
    "apply_input_path",
    "apply_output_path",
    "apply_result_path",
    "choose",
    "compile_context_path",
    "compile_path",
    "compile_reference_path",
    "error_matches",
    "evaluate_intrinsic",
    "format_timestamp",
    "handle_failure",
    "parse_definition",
    "parse_intrinsic",
    "parse_timestamp",
    "resolve_seconds",
    "to_json_text",
    "wait_until",
]
