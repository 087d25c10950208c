"""People: who is in each role, and where their approval links go.

`SWITCHYARD_ROLES='{"lead": [{"name": "dana", "email": "dana@example.com", "slack": "U024BE7LH"}]}'`
(a bare string is a person with a name only). On AWS the stack sets the same JSON from CDK context
`switchyard:roles`. The decision rules stay in `switchyard.gates.roles`; this module adds contacts.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from switchyard.constants import ROLES_ENV
from switchyard.gates.roles import Roles

_EMAIL = re.compile(r"^[^@\s<>\"',;]{1,64}@[A-Za-z0-9.-]{1,253}$")
_SLACK_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")


class PeopleError(ValueError):
    """SWITCHYARD_ROLES does not describe people as documented (docs/approvals.md)."""


@dataclass(frozen=True, slots=True)
class Person:
    name: str
    email: str | None = None
    slack: str | None = None
    """A Slack member id (`U024BE7LH`): approval messages go to them as a DM from the app."""


@dataclass(frozen=True)
class People:
    roles: dict[str, tuple[Person, ...]] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> People:
        raw = (environ if environ is not None else os.environ).get(ROLES_ENV)
        if not raw:
            return cls()
        try:
            data = json.loads(raw)
        except ValueError:
            raise PeopleError(f"{ROLES_ENV} is not JSON") from None
        return cls.from_json(data)

    @classmethod
    def from_json(cls, data: Any) -> People:
        if not isinstance(data, dict):
            raise PeopleError(f"{ROLES_ENV} must be an object of roles, each a list of people")
        roles: dict[str, tuple[Person, ...]] = {}
        for role, members in data.items():
            if not isinstance(members, list):
                raise PeopleError(f"role {role!r}: a list of people, not {type(members).__name__}")
            roles[str(role)] = tuple(_person(str(role), member) for member in members)
        return cls(roles)

    def access(self) -> Roles:
        """Who may decide (the rules every port applies)."""
        return Roles({role: frozenset(p.name for p in ps) for role, ps in self.roles.items()})

    def deciders(self, assignee: str | None) -> tuple[Person, ...] | None:
        """The people who decide a gate of this assignee; None when anyone may (no roles map,
        or a gate without assignee and no `operators` role)."""
        role = self.access().deciding_role(assignee)
        if role is None:
            return None
        return self.roles.get(role, ())

    def by_email(self, email: str) -> Person | None:
        """The person with this address (case-insensitive: the dashboard's signed-in person on
        AWS is named by their verified e-mail)."""
        wanted = email.strip().lower()
        for people in self.roles.values():
            for person in people:
                if person.email is not None and person.email.lower() == wanted:
                    return person
        return None

    def by_slack_id(self, slack_id: str) -> Person | None:
        for people in self.roles.values():
            for person in people:
                if person.slack == slack_id:
                    return person
        return None


def _person(role: str, member: Any) -> Person:
    if isinstance(member, str):
        return Person(member)
    if not isinstance(member, dict) or not isinstance(member.get("name"), str):
        raise PeopleError(f"role {role!r}: a person is a name or an object with a 'name'")
    unknown = sorted(set(member) - {"name", "email", "slack"})
    if unknown:
        raise PeopleError(f"role {role!r}, {member['name']}: unknown field(s) {', '.join(unknown)}")
    email, slack = member.get("email"), member.get("slack")
    if email is not None and (not isinstance(email, str) or not _EMAIL.match(email)):
        raise PeopleError(f"role {role!r}, {member['name']}: 'email' is not an e-mail address")
    if slack is not None and (not isinstance(slack, str) or not _SLACK_ID.match(slack)):
        raise PeopleError(
            f"role {role!r}, {member['name']}: 'slack' must be a Slack member id like U024BE7LH"
        )
    return Person(member["name"], email, slack)
