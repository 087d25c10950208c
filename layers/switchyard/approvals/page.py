"""The approval page: plain HTML (no JavaScript), every value autoescaped by Jinja2.

The page posts its form back to its own address; the answer pages say what was decided, or why
nothing was. Headers keep the link out of Referer headers, caches and frames.
"""

from __future__ import annotations

import json
from typing import Any

from jinja2 import DictLoader, Environment, select_autoescape

from switchyard.approvals.service import choices
from switchyard.gates import Gate
from switchyard.local.budget_raise import BudgetRaise

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}

_LAYOUT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{{ title }} · switchyard</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;
color:#1d2430}
h1{font-size:1.35rem;margin:.2rem 0 1rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0 0 1rem}
dt{color:#5b6472}dd{margin:0}
pre{background:#f4f6f8;padding:.75rem;border-radius:6px;overflow:auto;white-space:pre-wrap}
.message{font-size:1.05rem;border-left:4px solid #3b82f6;padding:.3rem .8rem;margin:1rem 0;
white-space:pre-wrap}
textarea{width:100%;box-sizing:border-box;font:inherit;padding:.4rem}
button{font:inherit;padding:.5rem 1.4rem;border-radius:6px;border:0;margin-right:.6rem;
cursor:pointer}
.approve{background:#16a34a;color:#fff}.reject{background:#dc2626;color:#fff}
.notice{padding:.8rem 1rem;border-radius:6px;background:#f4f6f8}
.brand{color:#5b6472;font-size:.85rem}
</style></head>
<body><div class="brand">switchyard · approval</div>
{% block body %}{% endblock %}
</body></html>
"""

_GATE = """{% extends "layout" %}{% block body %}
<h1>{{ heading }}</h1>
<dl>
<dt>Workflow</dt><dd>{{ gate.workflow }}{% if gate.version %} v{{ gate.version }}{% endif %}</dd>
<dt>Run</dt><dd>{{ gate.run_id }}</dd>
<dt>Step</dt><dd>{{ gate.step_id }}</dd>
<dt>Tier</dt><dd>{{ gate.tier + 1 }}{% if gate.assignee %} ({{ gate.assignee }}){% endif %}</dd>
<dt>Deadline</dt><dd>{{ deadline }}</dd>
<dt>You</dt><dd>{{ person }}</dd>
</dl>
{% if gate.message %}<div class="message">{{ gate.message }}</div>{% endif %}
{% if show %}<h2>Data</h2><pre>{{ show }}</pre>{% endif %}
{% if request %}<h2>{{ request_heading }}</h2><pre>{{ request }}</pre>{% endif %}
<form method="post">
<p><label for="note">Note (optional)</label><br>
<textarea id="note" name="note" rows="3" maxlength="{{ max_note }}"></textarea></p>
{% if editable %}<p><label for="edits">Edits (JSON: change the values you approve with)</label><br>
<textarea id="edits" name="edits" rows="6">{{ show }}</textarea></p>{% endif %}
{% if raisable %}<p><label for="raise_budget_usd">Raise the budget by (US dollars, optional;
resuming without a raise runs the step against the same budget)</label><br>
<input id="raise_budget_usd" name="raise_budget_usd" type="number" min="0.01" step="0.01"
max="{{ max_raise }}" inputmode="decimal"></p>{% endif %}
<p>{% for choice in choices %}<button class="{{ 'reject' if choice.danger else 'approve' }}"
type="submit" name="decision" value="{{ choice.decision }}">{{ choice.label }}</button>
{% endfor %}</p>
</form>
{% endblock %}"""

_NOTICE = """{% extends "layout" %}{% block body %}
<h1>{{ title }}</h1>
<p class="notice">{{ message }}</p>
{% if gate %}<dl>
<dt>Workflow</dt><dd>{{ gate.workflow }}</dd>
<dt>Run</dt><dd>{{ gate.run_id }}</dd>
<dt>Step</dt><dd>{{ gate.step_id }}</dd>
{% if gate.reviewer %}<dt>Decided by</dt><dd>{{ gate.reviewer }}</dd>{% endif %}
{% if gate.decided_at %}<dt>At</dt><dd>{{ gate.decided_at.isoformat(timespec="seconds") }}</dd>
{% endif %}{% if gate.note %}<dt>Note</dt><dd>{{ gate.note }}</dd>{% endif %}
</dl>{% endif %}
{% endblock %}"""

_ENV = Environment(
    loader=DictLoader({"layout": _LAYOUT, "gate": _GATE, "notice": _NOTICE}),
    autoescape=select_autoescape(default=True, default_for_string=True),
    auto_reload=False,
)


HEADINGS = {
    "approval": "Approve or reject",
    "human": "A tool call needs your approval",
    "pause": "A step failed and its run is paused",
    "budget": "A step did not fit the budget and its run is paused",
}
REQUEST_HEADINGS = {"human": "The call, exactly as it will run", "pause": "What went wrong"}
VERDICTS = {
    "approved": "the run goes on",
    "rejected": "the step is rejected",
    "resume": "the step runs again",
    "cancel": "the run is stopped",
}
PAST = {"resume": "resumed", "cancel": "cancelled"}
"""A decision's record (`resume`, `cancel`) as a person reads it."""


def gate_page(gate: Gate, person: str, *, max_note: int, max_raise: float = 0) -> str:
    """The page of a link: the gate and the form of its choices (`max_raise`: the most dollars
    a refused budget may be raised by; 0: the page offers no raise)."""
    heading = HEADINGS.get(gate.kind, "A decision is needed")
    request = shown_request(gate) if gate.kind == "human" else gate.request
    return _ENV.get_template("gate").render(
        title=heading,
        heading=heading,
        gate=gate,
        person=person,
        deadline=gate.deadline.isoformat(timespec="seconds") if gate.deadline else "none",
        show=pretty(gate.show) if gate.show else "",
        request=pretty(request) if request and gate.kind != "approval" else "",
        request_heading=REQUEST_HEADINGS.get(gate.kind, "What went wrong"),
        editable=gate.kind == "approval" and gate.allow_edit,
        raisable=gate.kind == "budget" and max_raise > 0,
        max_raise=max_raise,
        choices=choices(gate),
        max_note=max_note,
    )


def notice_page(title: str, message: str, gate: Gate | None = None) -> str:
    return _ENV.get_template("notice").render(title=title, message=message, gate=gate)


def decided_page(gate: Gate, raised: BudgetRaise | None = None) -> str:
    decision = gate.decision or "decided"
    verdict = PAST.get(decision, decision)
    outcome = VERDICTS.get(decision, "the run goes on")
    message = f"You {verdict} '{gate.step_id}' of run {gate.run_id}; {outcome}."
    if raised is not None and raised.scope:
        message += f" The budget {raised.scope} was raised first."
    elif raised is not None and raised.why_not:
        message += f" No budget was raised: {raised.why_not}."
    return notice_page(verdict.capitalize(), message, gate)


def shown_request(gate: Gate) -> Any:
    """A tool call awaiting approval: its tool and arguments (redacted as recorded)."""
    detail = (gate.request or {}).get("detail")
    if isinstance(detail, dict):
        return {k: detail[k] for k in ("tool", "args", "reason") if k in detail}
    return gate.request


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
