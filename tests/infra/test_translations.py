"""Cron expressions and trigger templates, translated for AWS."""

from __future__ import annotations

import pytest

from infra.translate.cron import CronTranslationError, day_of_week, scheduler_expressions
from infra.translate.input_paths import UnsupportedTemplateError, translate_input


@pytest.mark.parametrize(
    ("cron", "expected"),
    [
        ("0 9 * * *", ["cron(0 9 * * ? *)"]),
        ("*/15 * * * *", ["cron(*/15 * * * ? *)"]),
        ("0 9 * * MON-FRI", ["cron(0 9 ? * MON-FRI *)"]),
        ("0 9 1,15 * *", ["cron(0 9 1,15 * ? *)"]),
        ("0 9 1 JAN *", ["cron(0 9 1 JAN ? *)"]),
        ("30 8 1 * 1-5", ["cron(30 8 1 * ? *)", "cron(30 8 ? * 2-6 *)"]),
    ],
)
def test_five_field_cron_becomes_scheduler_expressions(cron: str, expected: list[str]) -> None:
    assert scheduler_expressions(cron) == expected


@pytest.mark.parametrize(
    ("unix", "aws"),
    [
        ("0", "1"),
        ("7", "1"),
        ("1-5", "2-6"),
        ("0,6", "1,7"),
        ("5-7", "6-7,1"),
        ("6-7", "7,1"),
        ("*/2", "*/2"),
        ("1-5/2", "2-6/2"),
        ("5L", "6L"),
        ("1#2", "2#2"),
        ("sat,sun", "SAT,SUN"),
    ],
)
def test_day_of_week_counts_from_sunday_as_one(unix: str, aws: str) -> None:
    assert day_of_week(unix) == aws


def test_out_of_range_day_is_refused() -> None:
    with pytest.raises(CronTranslationError):
        day_of_week("8")


def test_lone_paths_keep_their_type_and_text_becomes_format() -> None:
    translated = translate_input(
        {
            "id": "{{ event.detail.id }}",
            "padded": "  {{ event.detail.id }} ",
            "note": "Ticket {{ event.detail.id }}: it's {{ event['detail']['first-line'] }}",
            "fixed": "daily",
            "item": "{{ event.detail.items[0] }}",
        },
        root="event",
        base="$",
    )
    assert translated.parameters == {
        "id.$": "$.detail.id",
        "padded.$": "$.detail.id",
        "note.$": "States.Format('Ticket {}: it\\'s {}', $.detail.id, $.detail['first-line'])",
        "fixed": "daily",
        "item.$": "$.detail.items[0]",
    }
    assert ("detail", "first-line") in translated.paths


def test_braces_and_backslashes_in_text_are_escaped_for_format() -> None:
    translated = translate_input({"x": "{a} \\ {{ message.id }}"}, root="message", base="$.m")
    assert translated.parameters == {"x.$": "States.Format('\\{a\\} \\\\ {}', $.m.id)"}


@pytest.mark.parametrize(
    "template",
    [
        "{{ event.detail.id | upper }}",
        "{{ event.detail.count + 1 }}",
        "{{ run.id }}",
        "{% if event.detail %}x{% endif %}",
        "{{ event.detail[event.key] }}",
    ],
)
def test_templates_that_need_code_are_refused(template: str) -> None:
    with pytest.raises(UnsupportedTemplateError, match=r"input\.v"):
        translate_input({"v": template}, root="event", base="$")
