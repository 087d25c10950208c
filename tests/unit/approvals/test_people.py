"""People in SWITCHYARD_ROLES: names, e-mail addresses and Slack ids."""

from __future__ import annotations

import json

import pytest

from switchyard.approvals import People, PeopleError, Person
from switchyard.constants import ROLES_ENV
from switchyard.gates import Roles

ROLES = {
    "lead": [{"name": "dana", "email": "dana@example.com", "slack": "U024BE7LH"}, "sam"],
    "operators": ["olga"],
}


def test_people_have_contacts_and_a_bare_string_is_a_name() -> None:
    people = People.from_env({ROLES_ENV: json.dumps(ROLES)})
    assert people.roles["lead"] == (Person("dana", "dana@example.com", "U024BE7LH"), Person("sam"))
    assert people.by_slack_id("U024BE7LH") == Person("dana", "dana@example.com", "U024BE7LH")
    assert people.deciders("lead") == people.roles["lead"]
    assert people.deciders(None) == (Person("olga"),)


def test_the_decision_rules_read_the_same_map() -> None:
    roles = Roles.from_json(ROLES)
    assert roles.may_decide("lead", "dana") and roles.may_decide("lead", "sam")
    assert not roles.may_decide("lead", "olga")
    assert People.from_json(ROLES).access() == roles


def test_without_a_map_anyone_decides() -> None:
    assert People.from_env({}).deciders("lead") is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"lead": "dana"}, "a list of people"),
        ({"lead": [{"email": "x@example.com"}]}, "a name or an object"),
        ({"lead": [{"name": "d", "email": "not an address"}]}, "not an e-mail address"),
        ({"lead": [{"name": "d", "slack": "dana"}]}, "Slack member id"),
        ({"lead": [{"name": "d", "phone": "1"}]}, "unknown field"),
        (["lead"], "object of roles"),
    ],
)
def test_a_bad_map_says_what_is_wrong(value: object, message: str) -> None:
    with pytest.raises(PeopleError, match=message):
        People.from_json(value)
