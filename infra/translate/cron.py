"""Five-field cron (`0 9 * * MON-FRI`) to EventBridge Scheduler's six-field `cron(...)`.

Scheduler's day of week counts 1-7 from Sunday (Unix: 0-7, 0 and 7 are Sunday), and exactly one of
day-of-month and day-of-week must be `?`. Unix cron runs when *either* restricted day field
matches; Scheduler cannot say that, so such an expression becomes two schedules, one per field.
The trigger's starter names the run after the scheduled time, so an instant that matches both
starts one run, not two.
"""

from __future__ import annotations

import re

_NUMBER = re.compile(r"\d+")


class CronTranslationError(ValueError):
    pass


def _unix_day_to_aws(number: int) -> int:
    if not 0 <= number <= 7:
        raise CronTranslationError(f"day of week {number} is out of range 0-7")
    return 1 if number in (0, 7) else number + 1


def _day_of_week_term(term: str) -> list[str]:
    """One comma-separated term of the day-of-week field."""
    if term in ("*", "?") or term.startswith("*/") or not any(c.isdigit() for c in term):
        # `*/n` counts from Sunday in both systems; names (MON-FRI) are the same.
        return [term]
    base, slash, step = term.partition("/")
    if "-" in base and base.replace("-", "").isdigit():
        low, high = (int(part) for part in base.split("-", 1))
        if high == 7 and low > 0:
            # Unix `5-7` is Fri..Sun; Scheduler has Sun as 1, so Sunday leaves the range.
            if slash:
                raise CronTranslationError(f"'{term}': a stepped range ending on day 7")
            head = f"{_unix_day_to_aws(low)}-7" if low < 6 else "7"
            return [head, "1"]
        base = f"{_unix_day_to_aws(low)}-{_unix_day_to_aws(high)}"
        return [base + (slash + step if slash else "")]
    # n, nL, n#k, n/step
    translated = _NUMBER.sub(lambda m: str(_unix_day_to_aws(int(m.group()))), base, count=1)
    return [translated + (slash + step if slash else "")]


def day_of_week(field: str) -> str:
    terms: list[str] = []
    for term in field.split(","):
        terms += _day_of_week_term(term.upper())
    return ",".join(terms)


def scheduler_expressions(cron: str) -> list[str]:
    """Scheduler `cron(...)` expressions that together fire when the five-field `cron` does."""
    fields = cron.split()
    if len(fields) != 5:
        raise CronTranslationError(f"'{cron}' does not have five fields")
    minute, hour, dom, month, dow = fields
    dom_any = dom in ("*", "?")
    dow_any = dow in ("*", "?")
    if dow_any:
        return [f"cron({minute} {hour} {'*' if dom_any else dom} {month} ? *)"]
    aws_dow = day_of_week(dow)
    if dom_any:
        return [f"cron({minute} {hour} ? {month} {aws_dow} *)"]
    return [
        f"cron({minute} {hour} {dom} {month} ? *)",
        f"cron({minute} {hour} ? {month} {aws_dow} *)",
    ]
