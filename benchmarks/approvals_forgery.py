"""Forged, bit-flipped, truncated, expired and replayed approval links and signed Slack requests:
how many are accepted (must be 0), and how long verifying one takes.

    .venv/bin/python benchmarks/approvals_forgery.py              # 10,000 attempts
    .venv/bin/python benchmarks/approvals_forgery.py --total 500

Links go through `ApprovalService.open` (signature, expiry, then the gate row: a replayed link is
one whose gate was decided); Slack requests through `SlackVerifier.verify` (signature, 300 s
window, the replay guard in PostgreSQL). A genuine link and a genuine Slack request are tried too,
as controls: they must be accepted, or the benchmark proves nothing. A fresh database on
`--server` is created and dropped.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import random
import secrets
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers"))

from switchyard.approvals.links import LinkClaims, LinkSigner
from switchyard.approvals.service import ApprovalError, ApprovalService
from switchyard.approvals.settings import ApprovalSettings
from switchyard.approvals.slack import ReplayGuard, SlackRefusedError, SlackVerifier
from switchyard.gates import Gate, GateStore
from switchyard.stores.migrate import apply_migrations

SERVER = "host=127.0.0.1 port=5432 user=postgres"
SHARES = {  # of the total
    "link forged": 0.2,
    "link bit-flipped": 0.2,
    "link truncated": 0.1,
    "link expired": 0.1,
    "link replayed": 0.1,
    "slack forged": 0.1,
    "slack bit-flipped": 0.1,
    "slack stale": 0.05,
    "slack replayed": 0.05,
}


@dataclass
class Tally:
    tried: int = 0
    accepted: int = 0
    seconds: list[float] = field(default_factory=list)


@dataclass
class Report:
    tallies: dict[str, Tally]
    controls_accepted: int

    @property
    def accepted(self) -> int:
        return sum(t.accepted for t in self.tallies.values())

    @property
    def tried(self) -> int:
        return sum(t.tried for t in self.tallies.values())

    def lines(self) -> list[str]:
        out = [f"{'attempt':<20} {'tried':>7} {'accepted':>9} {'median µs':>10} {'p99 µs':>8}"]
        for name, tally in self.tallies.items():
            ordered = sorted(tally.seconds)
            p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)] if ordered else 0.0
            median = statistics.median(ordered) if ordered else 0.0
            out.append(
                f"{name:<20} {tally.tried:>7} {tally.accepted:>9} {median * 1e6:>10.1f}"
                f" {p99 * 1e6:>8.1f}"
            )
        out.append(f"total: {self.tried} tried, {self.accepted} accepted (must be 0);"
                   f" controls accepted {self.controls_accepted}/2")  # fmt: skip
        return out


@contextmanager
def fresh_database(server: str) -> Iterator[str]:
    name = f"switchyard_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(f"{server} dbname=postgres", autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(f"{server} dbname={name}") as conn:
            apply_migrations(conn)
        yield f"{server} dbname={name}"
    finally:
        with psycopg.connect(f"{server} dbname=postgres", autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


class _NoCallbacks:
    """Nothing here decides: a call means a forged link was accepted as far as deciding."""

    def send_success(self, token: str, output: Any) -> None:
        raise AssertionError("a forged link reached the run")

    def send_failure(self, token: str, error: str, cause: str) -> None:
        raise AssertionError("a forged link reached the run")

    def stop(self, execution_arn: str, error: str, cause: str) -> None:
        raise AssertionError("a forged link reached the run")


def _gate(gate_id: str, deadline: datetime) -> Gate:
    return Gate(
        id=gate_id, run_id="bench", execution_arn=f"arn:bench:{gate_id}", workflow="bench",
        version=1, step_id=f"approve-{gate_id}", kind="approval", tier=0, assignee="lead",
        channels=["email"], message="bench", show={}, allow_edit=False, request=None,
        token=secrets.token_urlsafe(48), deadline=deadline,
    )  # fmt: skip


def _flip(token: str, rng: random.Random) -> str:
    """One bit of the signed part or the signature changed, re-encoded."""
    kid, claims, signature = token.split(".")
    part = rng.choice((1, 2))
    text = claims if part == 1 else signature
    raw = bytearray(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
    changed = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    return f"{kid}.{changed}.{signature}" if part == 1 else f"{kid}.{claims}.{changed}"


def _forged(rng: random.Random, kid: str) -> str:
    claims = {"g": secrets.token_urlsafe(16), "t": 0, "p": rng.choice(["dana", "eve"])}
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    guess = base64.urlsafe_b64encode(rng.randbytes(32)).rstrip(b"=").decode()
    return f"{rng.choice([kid, 'k0', 'local2'])}.{body}.{guess}"


def _slack_headers(secret: bytes, stamp: int, body: bytes) -> dict[str, str]:
    digest = hmac.new(secret, b"v0:" + str(stamp).encode() + b":" + body, hashlib.sha256)
    return {
        "x-slack-request-timestamp": str(stamp),
        "x-slack-signature": f"v0={digest.hexdigest()}",
    }


def run(total: int, conninfo: str, *, seed: int = 7) -> Report:
    rng = random.Random(seed)
    now = datetime.now(UTC)
    pool = ConnectionPool(conninfo, min_size=1, max_size=4, open=True, kwargs={"autocommit": True})
    try:
        signer = LinkSigner({"k1": secrets.token_bytes(32)})
        settings = ApprovalSettings(signer=signer, public_url="https://approve.example.com")
        service = ApprovalService(settings, pool, _NoCallbacks(), clock=lambda: now)
        store = GateStore(pool)
        open_gate, decided_gate = (
            _gate("open-1", now + timedelta(hours=1)),
            _gate("decided-1", now + timedelta(hours=1)),
        )
        store.open(open_gate)
        store.open(decided_gate)
        decided_gate.decision, decided_gate.reviewer = "approved", "dana"
        store.close(decided_gate)
        expires = int((now + timedelta(hours=1)).timestamp())
        genuine = signer.sign(LinkClaims(open_gate.id, 0, "dana", expires))
        spent = signer.sign(LinkClaims(decided_gate.id, 0, "dana", expires))
        slack_secret = secrets.token_bytes(24)
        verifier = SlackVerifier(slack_secret.hex(), ReplayGuard(pool), clock=lambda: now)
        stamp = int(now.timestamp())

        def link_accepted(token: str) -> bool:
            try:
                service.open(token)
            except ApprovalError:
                return False
            return True

        def slack_accepted(headers: dict[str, str], body: bytes) -> bool:
            try:
                verifier.verify(headers, body)
            except SlackRefusedError:
                return False
            return True

        controls = int(link_accepted(genuine))
        first = b"payload=" + json.dumps({"n": "genuine"}).encode()
        controls += int(
            slack_accepted(_slack_headers(slack_secret.hex().encode(), stamp, first), first)
        )
        replayed_body = b"payload=" + json.dumps({"n": "replayed"}).encode()
        replayed_headers = _slack_headers(slack_secret.hex().encode(), stamp, replayed_body)
        slack_accepted(replayed_headers, replayed_body)  # heard once; every later one is a replay

        attempts: dict[str, Callable[[], bool]] = {
            "link forged": lambda: link_accepted(_forged(rng, "k1")),
            "link bit-flipped": lambda: link_accepted(_flip(genuine, rng)),
            "link truncated": lambda: link_accepted(genuine[: rng.randrange(len(genuine))]),
            "link expired": lambda: link_accepted(
                signer.sign(LinkClaims(open_gate.id, 0, "dana", stamp - rng.randrange(1, 10**6)))
            ),
            "link replayed": lambda: link_accepted(spent),
            "slack forged": lambda: slack_accepted(
                {
                    "x-slack-request-timestamp": str(stamp),
                    "x-slack-signature": "v0=" + rng.randbytes(32).hex(),
                },
                first,
            ),
            "slack bit-flipped": lambda: slack_accepted(
                _slack_headers(slack_secret.hex().encode(), stamp, first),
                _flip_byte(first, rng),
            ),
            "slack stale": lambda: slack_accepted(
                _slack_headers(
                    slack_secret.hex().encode(), stamp - 301 - rng.randrange(10**5), first
                ),
                first,
            ),
            "slack replayed": lambda: slack_accepted(replayed_headers, replayed_body),
        }
        tallies = {name: Tally() for name in attempts}
        for name, attempt in attempts.items():
            tally = tallies[name]
            for _ in range(max(1, round(total * SHARES[name]))):
                started = time.perf_counter()
                accepted = attempt()
                tally.seconds.append(time.perf_counter() - started)
                tally.tried += 1
                tally.accepted += int(accepted)
        return Report(tallies, controls)
    finally:
        pool.close()


def _flip_byte(body: bytes, rng: random.Random) -> bytes:
    raw = bytearray(body)
    raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
    return bytes(raw)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, default=10_000)
    parser.add_argument("--server", default=SERVER, help="PostgreSQL conninfo (no dbname)")
    args = parser.parse_args()
    with fresh_database(args.server) as conninfo:
        report = run(args.total, conninfo)
    print("\n".join(report.lines()))
    return 0 if report.accepted == 0 and report.controls_accepted == 2 else 1


if __name__ == "__main__":
    sys.exit(main())
