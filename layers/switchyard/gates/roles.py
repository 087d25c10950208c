"""Who may decide a gate: roles map to people (SWITCHYARD_ROLES); without a map, anyone may.

A gate with an assignee (an approval gate's tier) is decided by that role's people. A gate without
one (a tool call awaiting approval, a pause, a budget pause) is decided by the `operators` role's
people when the map defines that role, else by anyone.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from switchyard.constants import OPERATORS_ROLE, ROLES_ENV


@dataclass(frozen=True)
class Roles:
    people: dict[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> Roles:
        raw = os.environ.get(ROLES_ENV)
        if not raw:
            return cls()
        return cls.from_json(json.loads(raw))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Roles:
        """A person is a name, or an object with a `name` (and contacts: `switchyard.approvals.
        people` reads those)."""
        return cls({role: frozenset(map(_name, members)) for role, members in data.items()})

    def deciding_role(self, assignee: str | None) -> str | None:
        """The role whose people decide a gate of this assignee; None: anyone may."""
        if not self.people:
            return None
        if assignee is None:
            return OPERATORS_ROLE if OPERATORS_ROLE in self.people else None
        return assignee

    def may_decide(self, assignee: str | None, reviewer: str) -> bool:
        return self.refusal(assignee, reviewer) is None

    def refusal(self, assignee: str | None, reviewer: str) -> str | None:
        """Why `reviewer` may not decide a gate of this assignee; None when they may."""
        role = self.deciding_role(assignee)
        if role is None or reviewer in self.people.get(role, frozenset()):
            return None
        return (
            f"{reviewer} may not decide for {role}"
            " (SWITCHYARD_ROLES lists who may; ask one of them)"
        )


def _name(member: Any) -> str:
    return str(member["name"]) if isinstance(member, dict) and "name" in member else str(member)
