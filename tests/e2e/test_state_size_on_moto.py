"""document-processing over 200 documents of realistic size, on moto: no state of the run takes
more than Step Functions' 256 KB.

moto fails a Task whose result passes the limit (as `States.DataLimitExceeded` would), and the
test also measures every state's input and output in the execution history, as UTF-8 JSON. With
every output limit at 32 KiB (the code before the payload plan) the run fails at the map (checked
by hand: "The state/task 'summarize_each (2)' returned a result with a size exceeding the maximum
number of bytes service limit"). A contract of about 6 KB is
fetched per document and summarised in about 1.4 KB; 200 such summaries alone are over 256 KB, so
the map's list only fits because each item's output keeps at most its share inline (the compiled
`output_limit` of the child's link) and the rest goes to the output store (S3 on moto).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from switchyard.contract import OUTPUT_REF_KEY
from switchyard.validate.payload_size import STATE_LIMIT
from tests.e2e import test_examples_on_moto as moto_examples
from tests.e2e.test_examples_on_moto import MotoRun, run_on_moto
from tests.pg import fresh_database

DOCUMENTS = 200

# 200 child executions on moto take one to five minutes, by how busy the machine is: the test's
# own deadline (900 s, below) governs, not the suite's default per-test timeout.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CLAUSES = [
    "Term. This agreement renews for twenty-four months from 1 July 2026 and then for successive "
    "twelve-month periods unless either party gives ninety days' written notice of non-renewal.",
    "Prices. Unit prices in Schedule B rise on each anniversary by the Eurostat HICP index plus "
    "three percentage points, without cap, and the Supplier may add a fuel surcharge monthly.",
    "Service levels. On-time delivery of ninety-six per cent per calendar month; below ninety per "
    "cent in two consecutive months the Buyer may terminate the affected Schedule without cost.",
    "Liability. Each party's aggregate liability is capped at the fees paid in the preceding "
    "twelve months; the cap does not apply to breaches of the data protection clause.",
    "Subcontracting. The Supplier may subcontract carriage without the Buyer's consent, provided "
    "it remains responsible for the acts and omissions of its subcontractors as for its own.",
    "Data protection. The Supplier processes shipment contact data as a processor; sub-processors "
    "outside the EEA need prior written notice only, not the Buyer's consent.",
]


def contract(number: int) -> str:
    """About 6 KB of contract text."""
    sections = [f"SUPPLIER AGREEMENT {number:04d} - RENEWAL ON STANDARD TERMS v4.2"]
    for n in range(36):
        sections.append(f"{n + 1}. {CLAUSES[n % len(CLAUSES)]}")
    return "\n".join(sections)


SUMMARY = (
    "A twenty-four-month renewal on the supplier's Standard Terms v4.2 that then renews every "
    "twelve months unless either side gives ninety days' written notice, so the window to leave "
    "closes on 2 April 2028. Unit prices rise on each anniversary by HICP plus three points with "
    "no cap, and the supplier may add a monthly fuel surcharge on top, which together make the "
    "real cost over the term hard to forecast. Delivery must reach ninety-six per cent on time "
    "each month; two consecutive months below ninety let the buyer end the affected schedule "
    "without cost, which is the buyer's main lever. Liability is capped at twelve months of "
    "fees, except the supplier's data-protection breaches, which are uncapped. The supplier may "
    "subcontract carriage and appoint sub-processors outside the EEA on notice alone, so the "
    "buyer cannot veto where shipment contact data goes; the data processing addendum should be "
    "reviewed with the privacy team before signing, and the fuel surcharge should be capped. "
    "Termination for convenience is the buyer's alone, on sixty days' notice, while the supplier "
    "has no such right; disputes go to the courts of Amsterdam under Dutch law, and the "
    "agreement contains no escalation step before litigation. Compared with the 2024 terms, the "
    "only material changes are the uncapped escalation and the notice-only sub-processors."
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoRun]:
    folder = tmp_path_factory.mktemp("batch")
    script = _script(folder)
    given = {
        "batch_id": "LGL-2026-0500",
        "requester_email": "priya.raman@example.com",
        "documents": [
            {
                "id": f"SUP-{n:04d}",
                "url": f"https://contracts.example.com/suppliers/SUP-{n:04d}/renewal-2026.txt",
                "title": f"Supplier agreement renewal: supplier {n:04d} Logistics GmbH",
            }
            for n in range(DOCUMENTS)
        ],
    }
    with fresh_database() as conninfo, pytest.MonkeyPatch.context() as monkeypatch:
        # 200 child executions on moto, 8 at a time, take minutes on the shared 2-CPU machine.
        monkeypatch.setattr(moto_examples, "DEADLINE_SECONDS", 900)
        yield run_on_moto("document-processing", conninfo, monkeypatch, given=given, script=script)


def _script(folder: Path) -> Path:
    example = yaml.safe_load(
        (Path(__file__).parents[2] / "workflows/scripts/document-processing.yaml").read_text()
    )
    example["fetch"] = [
        {"output": {"status": 200, "headers": {"content-type": "text/plain"}, "body": contract(1)}}
    ]
    example["summarize"][0]["output"]["summary"] = SUMMARY
    path = folder / "script.yaml"
    path.write_text(yaml.safe_dump(example))
    return path


def state_sizes(events: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """(bytes, where) of every state's input and output in a history."""
    sizes = []
    for event in events:
        for key, details in event.items():
            if not key.endswith("EventDetails") or not isinstance(details, dict):
                continue
            for field in ("input", "output"):
                value = details.get(field)
                if isinstance(value, str):
                    where = f"{event['type']} {details.get('name', '')} {field}"
                    sizes.append((len(value.encode()), where))
    return sizes


@pytest.mark.slow
def test_the_batch_succeeds_with_every_state_within_256_kb(run: MotoRun) -> None:
    assert run.described["status"] == "SUCCEEDED", run.described.get("cause")
    assert len(SUMMARY.encode()) * DOCUMENTS > STATE_LIMIT  # inline, the list could not fit
    sizes = state_sizes(run.events)
    largest = max(sizes)
    assert largest[0] <= STATE_LIMIT, largest
    # The measure sees the map's list: 200 outputs, each at least a reference (~360 bytes).
    assert largest[0] > DOCUMENTS * 256, largest


@pytest.mark.slow
def test_each_documents_summary_went_to_the_store_and_the_brief_read_it_back(
    run: MotoRun,
) -> None:
    exited = [
        json.loads(e["stateExitedEventDetails"]["output"])
        for e in run.events
        if e["type"] == "MapStateExited"
    ]
    (state,) = exited
    items = state["steps"]["summarize_each"]["output"]
    assert len(items) == DOCUMENTS
    assert all(OUTPUT_REF_KEY in json.dumps(item) for item in items)
    assert {item["risk_level"] for item in items} == {"medium"}  # small fields stay inline
    brief = [r for r in run.returned if r.step_id == "brief"]
    assert len(brief) == 1 and brief[0].result["output"]["title"]
