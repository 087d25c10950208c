# ruff: noqa: E501  (one documented case a line reads best as a table)
"""EventBridge pattern matching, on the documentation's own examples
(docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html and
eb-event-patterns.html), checked against moto's independent implementation as well."""

from __future__ import annotations

import json
from typing import Any

import pytest
from moto.events.models import EventPattern

from switchyard.triggers.patterns import PatternError, matches

EC2 = {
    "version": "0",
    "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
    "detail-type": "EC2 Instance State-change Notification",
    "source": "aws.ec2",
    "account": "111122223333",
    "time": "2017-12-22T18:43:48Z",
    "region": "us-west-1",
    "resources": ["arn:aws:ec2:us-west-1:123456789012:instance/i-1234567890abcdef0"],
    "detail": {
        "instance-id": "i-1234567890abcdef0",
        "state": "terminated",
        "c-count": 5,
        "d-count": 7,
        "x-limit": 301.8,
        "source-ip": "10.0.0.123",
        "FileName": "image.png",
        "responseElements": None,
        "location": "eventbridge/us-west-2/production",
    },
}

CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("exact", {"source": ["aws.ec2"], "detail": {"state": ["terminated"]}}, True),
    ("exact, any of", {"detail": {"state": ["initializing", "running"]}}, False),
    ("exact is case sensitive", {"source": ["AWS.EC2"]}, False),
    ("a list field: any element", {"resources": [EC2["resources"][0]]}, True),
    ("null", {"detail": {"responseElements": [None]}}, True),
    ("numbers by value", {"detail": {"x-limit": [3.018e2]}}, True),
    ("prefix", {"time": [{"prefix": "2017-12-22"}]}, True),
    ("prefix misses", {"time": [{"prefix": "2017-10-02"}]}, False),
    ("prefix ignoring case", {"source": [{"prefix": {"equals-ignore-case": "AWS."}}]}, True),
    ("suffix", {"detail": {"FileName": [{"suffix": ".png"}]}}, True),
    ("suffix ignoring case", {"detail": {"FileName": [{"suffix": {"equals-ignore-case": ".PNG"}}]}}, True),
    ("equals-ignore-case", {"detail-type": [{"equals-ignore-case": "ec2 instance state-change notification"}]}, True),
    ("anything-but a value", {"detail": {"state": [{"anything-but": "initializing"}]}}, True),
    ("anything-but the value", {"detail": {"state": [{"anything-but": "terminated"}]}}, False),
    ("anything-but a list", {"detail": {"state": [{"anything-but": ["stopped", "overloaded"]}]}}, True),
    ("anything-but a prefix", {"detail": {"state": [{"anything-but": {"prefix": "term"}}]}}, False),
    ("anything-but a suffix", {"detail": {"FileName": [{"anything-but": {"suffix": ".txt"}}]}}, True),
    ("anything-but a number", {"detail": {"c-count": [{"anything-but": [1, 2, 3]}]}}, True),
    ("numeric range", {"detail": {"c-count": [{"numeric": [">", 0, "<=", 5]}], "d-count": [{"numeric": ["<", 10]}], "x-limit": [{"numeric": ["=", 3.018e2]}]}}, True),
    ("numeric out of range", {"detail": {"c-count": [{"numeric": [">", 5]}]}}, False),
    ("numeric on a string", {"detail": {"state": [{"numeric": [">", 0]}]}}, False),
    ("exists", {"detail": {"state": [{"exists": True}]}}, True),
    ("exists false on a present field", {"detail": {"state": [{"exists": False}]}}, False),
    ("exists false on a missing field", {"detail": {"missing": [{"exists": False}]}}, True),
    ("a missing field matches nothing else", {"detail": {"missing": ["x"]}}, False),
    ("cidr", {"detail": {"source-ip": [{"cidr": "10.0.0.0/24"}]}}, True),
    ("cidr misses", {"detail": {"source-ip": [{"cidr": "10.0.1.0/24"}]}}, False),
    ("wildcard", {"detail": {"location": [{"wildcard": "eventbridge/*/production"}]}}, True),
    ("wildcard misses", {"detail": {"location": [{"wildcard": "eventbridge/*/staging"}]}}, False),
    ("$or", {"$or": [{"detail": {"c-count": [{"numeric": [">", 10]}]}}, {"detail": {"d-count": [{"numeric": ["<", 10]}]}}]}, True),
    ("$or none", {"$or": [{"source": ["aws.s3"]}, {"detail-type": ["Object Created"]}]}, False),
    ("$or beside other keys", {"source": ["aws.ec2"], "$or": [{"detail": {"state": ["running"]}}, {"detail": {"c-count": [5]}}]}, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pattern", "expected"), [(p, e) for _, p, e in CASES], ids=[c[0] for c in CASES]
)
def test_documented_examples(pattern: dict[str, Any], expected: bool) -> None:
    assert matches(pattern, EC2) is expected


@pytest.mark.parametrize(
    ("pattern", "expected"), [(p, e) for _, p, e in CASES], ids=[c[0] for c in CASES]
)
def test_moto_agrees(pattern: dict[str, Any], expected: bool) -> None:
    assert EventPattern.load(json.dumps(pattern)).matches_event(EC2) is expected


@pytest.mark.parametrize(
    "pattern",
    [{"source": "aws.ec2"}, {"detail": {"n": [{"numeric": [">"]}]}}, {"x": [{"nope": 1}]}],
)
def test_a_pattern_eventbridge_refuses_is_an_error(pattern: dict[str, Any]) -> None:
    with pytest.raises(PatternError):
        matches(pattern, EC2)


def test_the_validator_reports_a_pattern_eventbridge_would_refuse() -> None:
    from switchyard.source import load_document
    from switchyard.validate import validate_document

    text = (
        "switchyard: 1\nname: w\nversion: 1\n"
        "triggers:\n  - {type: event, pattern: {source: [{prefx: shop}]}}\n"
        "steps:\n  a: {type: tool, tool: http.request, args: {url: 'https://example.com'}}\n"
    )
    result = validate_document(load_document(text, file="w.yaml"))
    [problem] = result.diagnostics
    assert problem.path == "triggers[0].pattern" and "unknown operator 'prefx'" in problem.message
