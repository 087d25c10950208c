"""Who may decide a gate: the assignee's people, the operators for gates without an assignee."""

from __future__ import annotations

import pytest

from switchyard.gates import Roles

ASK = " (SWITCHYARD_ROLES lists who may; ask one of them)"
ROLES = Roles(
    {
        "support_lead": frozenset({"lee@example.com"}),
        "operators": frozenset({"ops@example.com"}),
    }
)


def test_without_a_map_anyone_decides_any_gate() -> None:
    assert Roles().may_decide("support_lead", "anyone")
    assert Roles().may_decide(None, "anyone")


@pytest.mark.parametrize(
    ("assignee", "reviewer", "refusal"),
    [
        ("support_lead", "lee@example.com", None),
        (
            "support_lead",
            "ops@example.com",
            "ops@example.com may not decide for support_lead" + ASK,
        ),
        (
            "support_manager",
            "lee@example.com",
            "lee@example.com may not decide for support_manager" + ASK,
        ),
        (None, "ops@example.com", None),
        (None, "lee@example.com", "lee@example.com may not decide for operators" + ASK),
    ],
)
def test_a_map_limits_each_gate_to_its_role(
    assignee: str | None, reviewer: str, refusal: str | None
) -> None:
    assert ROLES.refusal(assignee, reviewer) == refusal
    assert ROLES.may_decide(assignee, reviewer) is (refusal is None)


def test_a_map_without_operators_leaves_gates_without_an_assignee_to_anyone() -> None:
    roles = Roles({"support_lead": frozenset({"lee@example.com"})})
    assert roles.may_decide(None, "anyone")
    assert not roles.may_decide("support_lead", "anyone")


def test_roles_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHYARD_ROLES", '{"operators": ["ops@example.com"]}')
    assert Roles.from_env().refusal(None, "x") == "x may not decide for operators" + ASK
