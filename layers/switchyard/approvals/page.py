"""The approval page: plain HTML (no JavaScript), every value autoescaped by Jinja2.

The page posts its form back to its own address; the answer pages say what was decided, or why
nothing was. Headers keep the link out of Referer headers, caches and frames.
"""

from __future__ import annotations

import json
from typing import Any

from jinja2 import DictLoader, Environment, select_autoescape

from switchyard.gates import Gate

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
{% if request %}<h2>The call, exactly as it will run</h2><pre>{{ request }}</pre>{% endif %}
<form method="post">
<p><label for="note">Note (optional)</label><br>
<textarea id="note" name="note" rows="3" maxlength="{{ max_note }}"></textarea></p>
{% if editable %}<p><label for="edits">Edits (JSON: change the values you approve with)</label><br>
<textarea id="edits" name="edits" rows="6">{{ show }}</textarea></p>{% endif %}
<p><button class="approve" type="submit" name="decision" value="approve">Approve</button>
<button class="reject" type="submit" name="decision" value="reject">Reject</button></p>
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


def gate_page(gate: Gate, person: str, *, max_note: int) -> str:
    heading = "Approve or reject" if gate.kind == "approval" else "A tool call needs your approval"
    return _ENV.get_template("gate").render(
        title=heading,
        heading=heading,
        gate=gate,
        person=person,
        deadline=gate.deadline.isoformat(timespec="seconds") if gate.deadline else "none",
        show=pretty(gate.show) if gate.show else "",
        request=pretty(shown_request(gate)) if gate.kind == "human" else "",
        editable=gate.kind == "approval" and gate.allow_edit,
        max_note=max_note,
    )


def notice_page(title: str, message: str, gate: Gate | None = None) -> str:
    return _ENV.get_template("notice").render(title=title, message=message, gate=gate)


def decided_page(gate: Gate) -> str:
    verdict = gate.decision or "decided"
    return notice_page(
        f"{verdict.capitalize()}",
        f"You {verdict} '{gate.step_id}' of run {gate.run_id}; the run goes on.",
        gate,
    )


def shown_request(gate: Gate) -> Any:
    """A tool call awaiting approval: its tool and arguments (redacted as recorded)."""
    detail = (gate.request or {}).get("detail")
    if isinstance(detail, dict):
        return {k: detail[k] for k in ("tool", "args", "reason") if k in detail}
    return gate.request


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
