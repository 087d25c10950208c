"""Who may decide a gate: roles map to people (SWITCHYARD_ROLES); without a map, anyone may."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from switchyard.constants import ROLES_ENV


@dataclass(frozen=True)
class Roles:
    people: dict[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> Roles:
        raw = os.environ.get(ROLES_ENV)
        if not raw:
            return cls()
        data = json.loads(raw)
        return cls({role: frozenset(map(str, members)) for role, members in data.items()})

    def may_decide(self, role: str | None, reviewer: str) -> bool:
        if not self.people or role is None:
            return True
        return reviewer in self.people.get(role, frozenset())
