"""Hand-written state machines for what the compiler does not emit: intrinsic functions, every
Wait form, Map with tolerated failures, heartbeats, InputPath/OutputPath/ResultSelector forms,
Choice operators, Fail with ErrorPath, Parallel failures."""

from __future__ import annotations

from typing import Any

FN = "arn:aws:states:::lambda:invoke"


def task(function: str, next_state: str | None = None, **extra: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "Type": "Task",
        "Resource": FN,
        "Parameters": {"FunctionName": function, "Payload.$": "$"},
        "ResultSelector": {"value.$": "$.Payload"},
        **extra,
    }
    if next_state:
        state["Next"] = next_state
    else:
        state["End"] = True
    return state


CASES: dict[str, tuple[dict[str, Any], Any]] = {
    "intrinsics": (
        {
            "StartAt": "Compute",
            "States": {
                "Compute": {
                    "Type": "Pass",
                    "Parameters": {
                        "format.$": "States.Format('Hello {} of {}', $.name, $.count)",
                        "array.$": "States.Array($.name, $.count, 'x')",
                        "partition.$": "States.ArrayPartition($.numbers, 2)",
                        "contains.$": "States.ArrayContains($.numbers, 3)",
                        "range.$": "States.ArrayRange(1, 9, 2)",
                        "item.$": "States.ArrayGetItem($.numbers, 1)",
                        "length.$": "States.ArrayLength($.numbers)",
                        "unique.$": "States.ArrayUnique($.dupes)",
                        "encoded.$": "States.Base64Encode($.name)",
                        "decoded.$": "States.Base64Decode('aGVsbG8=')",
                        "hash.$": "States.Hash($.name, 'SHA-256')",
                        "merged.$": "States.JsonMerge($.a, $.b, false)",
                        "json.$": "States.StringToJson('{\"k\": [1, 2]}')",
                        "text.$": "States.JsonToString($.a)",
                        "sum.$": "States.MathAdd($.count, -3)",
                        "split.$": "States.StringSplit('a,b,,c', ',')",
                        "nested.$": "States.ArrayLength(States.Array(1, States.MathAdd(1, 1)))",
                        "context.$": "$$.State.Name",
                    },
                    "End": True,
                }
            },
        },
        {
            "name": "Ada",
            "count": 5,
            "numbers": [1, 2, 3, 4, 5],
            "dupes": [1, 1, 2, "a", "a"],
            "a": {"x": 1, "y": {"z": 1}},
            "b": {"y": 2},
        },
    ),
    "wait-forms": (
        {
            "StartAt": "Seconds",
            "States": {
                "Seconds": {"Type": "Wait", "Seconds": 1, "Next": "SecondsPath"},
                "SecondsPath": {"Type": "Wait", "SecondsPath": "$.delay", "Next": "Timestamp"},
                "Timestamp": {
                    "Type": "Wait",
                    "Timestamp": "2020-01-01T00:00:00Z",
                    "Next": "TimestampPath",
                },
                "TimestampPath": {
                    "Type": "Wait",
                    "TimestampPath": "$.when",
                    "OutputPath": "$.keep",
                    "End": True,
                },
            },
        },
        {"delay": 1, "when": "2021-06-01T10:00:00Z", "keep": {"ok": True}},
    ),
    "map-tolerated-failures": (
        {
            "StartAt": "Each",
            "States": {
                "Each": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "ItemSelector": {
                        "value.$": "$$.Map.Item.Value",
                        "index.$": "$$.Map.Item.Index",
                    },
                    "MaxConcurrency": 2,
                    "ToleratedFailureCount": 2,
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "INLINE"},
                        "StartAt": "Check",
                        "States": {"Check": task("fail_odd")},
                    },
                    "ResultPath": "$.results",
                    "End": True,
                }
            },
        },
        {"items": [2, 3, 4, 5, 6]},
    ),
    "map-failure-over-threshold": (
        {
            "StartAt": "Each",
            "States": {
                "Each": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "ToleratedFailurePercentage": 20,
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "INLINE"},
                        "StartAt": "Check",
                        "States": {"Check": task("fail_odd")},
                    },
                    "Catch": [
                        {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Caught"}
                    ],
                    "End": True,
                },
                "Caught": {"Type": "Pass", "End": True},
            },
        },
        {"items": [1, 3, 5, 2]},
    ),
    "paths-and-selectors": (
        {
            "StartAt": "Shape",
            "States": {
                "Shape": {
                    "Type": "Pass",
                    "InputPath": "$.order",
                    "Parameters": {
                        "id.$": "$.id",
                        "lines.$": "$.lines[*].sku",
                        "first.$": "$.lines[0]",
                    },
                    "ResultPath": "$.shaped",
                    "OutputPath": "$.shaped",
                    "Next": "Double",
                },
                "Double": task("double", "Pick", ResultPath="$.doubled"),
                "Pick": {
                    "Type": "Choice",
                    "Choices": [
                        {
                            "And": [
                                {"Variable": "$.first.qty", "NumericGreaterThan": 1},
                                {"Variable": "$.id", "StringMatches": "ord-*"},
                            ],
                            "Next": "Big",
                        },
                        {"Variable": "$.missing", "IsPresent": False, "Next": "Small"},
                    ],
                    "Default": "Small",
                },
                "Big": {"Type": "Pass", "Result": "big", "ResultPath": "$.size", "End": True},
                "Small": {"Type": "Pass", "Result": "small", "ResultPath": "$.size", "End": True},
            },
        },
        {"order": {"id": "ord-1", "lines": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 1}]}},
    ),
    "retry-then-catch-with-error-path": (
        {
            "StartAt": "Flaky",
            "States": {
                "Flaky": task(
                    "always_fails",
                    "Done",
                    Retry=[
                        {
                            "ErrorEquals": ["Custom.Error"],
                            "IntervalSeconds": 1,
                            "MaxAttempts": 2,
                            "BackoffRate": 1.5,
                            "MaxDelaySeconds": 1,
                            "JitterStrategy": "FULL",
                        }
                    ],
                    Catch=[
                        {"ErrorEquals": ["States.ALL"], "ResultPath": "$.caught", "Next": "Report"}
                    ],
                ),
                "Report": {
                    "Type": "Fail",
                    "ErrorPath": "$.caught.Error",
                    "CausePath": "$.caught.Cause",
                },
                "Done": {"Type": "Succeed"},
            },
        },
        {"x": 1},
    ),
    "parallel-branch-fails": (
        {
            "StartAt": "Both",
            "States": {
                "Both": {
                    "Type": "Parallel",
                    "Branches": [
                        {"StartAt": "Ok", "States": {"Ok": {"Type": "Pass", "End": True}}},
                        {
                            "StartAt": "Bad",
                            "States": {
                                "Bad": {
                                    "Type": "Fail",
                                    "Error": "Branch.Failed",
                                    "Cause": "the second branch",
                                }
                            },
                        },
                    ],
                    "Catch": [
                        {
                            "ErrorEquals": ["Branch.Failed"],
                            "ResultPath": "$.why",
                            "Next": "Recovered",
                        }
                    ],
                    "End": True,
                },
                "Recovered": {"Type": "Pass", "OutputPath": "$.why", "End": True},
            },
        },
        {"start": True},
    ),
    "choice-operators": (
        {
            "StartAt": "Test",
            "States": {
                "Test": {
                    "Type": "Choice",
                    "Choices": [
                        {
                            "Variable": "$.when",
                            "TimestampLessThan": "2020-01-01T00:00:00Z",
                            "Next": "Old",
                        },
                        {"Not": {"Variable": "$.flag", "BooleanEquals": True}, "Next": "Off"},
                        {
                            "Variable": "$.count",
                            "NumericGreaterThanEqualsPath": "$.limit",
                            "Next": "Full",
                        },
                        {"Variable": "$.name", "StringGreaterThan": "m", "Next": "Late"},
                    ],
                    "Default": "Other",
                },
                "Old": {"Type": "Succeed"},
                "Off": {"Type": "Succeed"},
                "Full": {"Type": "Pass", "Result": "full", "End": True},
                "Late": {"Type": "Succeed"},
                "Other": {"Type": "Succeed"},
            },
        },
        {"when": "2024-05-01T00:00:00Z", "flag": True, "count": 7, "limit": 7, "name": "ada"},
    ),
}


HEARTBEAT = {
    "StartAt": "Wait for a person",
    "States": {
        "Wait for a person": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "Parameters": {
                "FunctionName": "remember_token",
                "Payload": {"token.$": "$$.Task.Token"},
            },
            "HeartbeatSeconds": 1,
            "TimeoutSeconds": 30,
            "Catch": [
                {
                    "ErrorEquals": ["States.HeartbeatTimeout"],
                    "ResultPath": "$.late",
                    "Next": "Too late",
                }
            ],
            "End": True,
        },
        "Too late": {"Type": "Pass", "Result": "no heartbeat", "End": True},
    },
}
