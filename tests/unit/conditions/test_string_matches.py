"""StringMatches as the Step Functions documentation states it: `*` is any run of characters,
`\\*` a literal star, `\\\\` a literal backslash. The condition language and the engine's Choice
rule both call this one function (tests/unit/engine/asl/test_choice_rules.py checks the rule)."""

from __future__ import annotations

import pytest

from switchyard.conditions.string_matches import string_matches


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("log-*.txt", "log-2026-12-01.txt", True),
        ("log-*.txt", "log-.txt", True),
        ("log-*.txt", "log-1.txt.gz", False),
        ("*", "", True),
        ("a*b*c", "a-b-c", True),
        ("a*b*c", "acb", False),
        ("star\\*", "star*", True),
        ("star\\*", "stars", False),
        ("back\\\\slash", "back\\slash", True),
        ("dot.plus+", "dot.plus+", True),
        ("dot.plus+", "dotXplus", False),
        ("multi*line", "multi\nline", True),
        ("exact", "exact ", False),
    ],
)
def test_star_matches_any_run_and_escapes_are_literal(
    pattern: str, text: str, expected: bool
) -> None:
    assert string_matches(pattern, text) is expected
