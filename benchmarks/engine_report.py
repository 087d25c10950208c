"""The printed report of `benchmarks/engine.py`: numbers, goals (issue 4) and ratios."""

from __future__ import annotations

import argparse
from typing import Any

GOALS = {
    "a_p50": 2.0,
    "a_p99": 10.0,
    "b_p50": 6.0,
    "c_rate": 400.0,
    "d_rss": 400.0,
    "speedup": {"dbos": 2.0, "temporal": 10.0},
}


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def print_report(results: dict[str, Any], args: argparse.Namespace) -> None:
    m = results["machine"]
    pg = m["postgresql"]
    print(f"switchyard engine benchmark, {results['started']}")
    print(
        f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; Python {m['python']};"
        f" {m['os']}"
    )
    print(
        f"PostgreSQL {pg.get('server_version')}: synchronous_commit={pg.get('synchronous_commit')},"
        f" fsync={pg.get('fsync')}, wal_sync_method={pg.get('wal_sync_method')} (durable commits"
        f" on); one-row durable commit p50 {m['commit_ms']['p50_ms']:.2f} ms,"
        f" p99 {m['commit_ms']['p99_ms']:.2f} ms"
    )
    print(f"engine measured: {m.get('engine_source')}")
    print(
        f"load average (1, 5, 15 min): {results.get('load_before')} at the start,"
        f" {results.get('load_after')} at the end (2 cores; other work skews every number)"
    )
    sy = results.get("switchyard", {})
    print()
    if "a" in sy:
        a = sy["a"]
        ok = a["p50_ms"] <= GOALS["a_p50"] and a["p99_ms"] <= GOALS["a_p99"]
        print(
            f"(a) step to step, 10 no-op tasks, one run at a time: p50 {a['p50_ms']:.2f} ms,"
            f" p99 {a['p99_ms']:.2f} ms, max {a['max_ms']:.2f} ms ({a['n']} gaps, {a['runs']}"
            f" runs) — goal p50 ≤ 2 ms, p99 ≤ 10 ms: {verdict(ok)}"
        )
    if "b" in sy:
        b = sy["b"]
        print(
            f"(b) 3-step workflow, start → done: p50 {b['p50_ms']:.2f} ms,"
            f" p99 {b['p99_ms']:.2f} ms, max {b['max_ms']:.2f} ms ({b['n']} runs)"
            f" — goal p50 ≤ 6 ms: {verdict(b['p50_ms'] <= GOALS['b_p50'])}"
        )
    if "c" in sy:
        c = sy["c"]
        d = c["done_since_burst"]
        print(
            f"(c) {c['workflows']} 3-step workflows started at once: all ended in"
            f" {c['seconds']:.2f} s = {c['per_second']:.0f} workflows/s (all starts committed after"
            f" {c['all_accepted_s']:.2f} s; a run ended p50 {d['p50_ms']:.0f} ms, p99"
            f" {d['p99_ms']:.0f} ms after the burst) — goal ≥ 400/s:"
            f" {verdict(c['per_second'] >= GOALS['c_rate'])}"
        )
    if "d" in sy:
        d = sy["d"]
        if "error" in d:
            print(f"(d) human gate: FAILED: {d['error']}")
        else:
            print(
                f"(d) {d['runs']} runs parked at a human gate: engine process RSS"
                f" {d['rss_parked_mb']:.0f} MB parked ({d['rss_baseline_mb']:.0f} MB before,"
                f" peak {d['rss_peak_mb']:.0f} MB, {d['rss_released_mb']:.0f} MB after release);"
                f" parked in {d['park_s']:.2f} s ({d['runs'] / d['park_s']:.0f}/s), released in"
                f" {d['release_s']:.2f} s ({d['runs'] / d['release_s']:.0f}/s);"
                f" {d['callback_errors']} callback errors — goal ≤ 400 MB:"
                f" {verdict(d['rss_peak_mb'] <= GOALS['d_rss'])}"
            )
    peers = results.get("peers")
    if peers:
        print_peers(sy, peers, args)


def print_peers(sy: dict[str, Any], peers: dict[str, Any], args: argparse.Namespace) -> None:
    print()
    print(
        f"(e) the 3-step workflow side by side ({args.runs} measured runs after {args.warmup}"
        f" warm-up runs; {args.burst} started at once). Switchyard's (b) and (c) are measured"
        " again just before each peer; each ratio uses that adjacent measurement."
    )
    print(f"{'':24} {'p50 ms':>8} {'p99 ms':>8} {'wf/s':>7}   switchyard vs the peer")
    for name, peer in peers.items():
        if "error" in peer:
            print(f"{name:24} could not run: {peer['error'][:400]}")
            continue
        mine = peer.get("switchyard_adjacent") or sy
        b, c = mine.get("b"), mine.get("c")
        if b and c:
            print(
                f"{'  switchyard, adjacent':24} {b['p50_ms']:8.2f} {b['p99_ms']:8.2f}"
                f" {c['per_second']:7.0f}   load {b['load_before']}"
            )
        e2e, rate = peer["e2e"], peer["throughput"]["per_second"]
        ratios = []
        if b:
            speedup = e2e["p50_ms"] / b["p50_ms"]
            ratios.append(
                f"{speedup:.2f}x faster at p50, {e2e['p99_ms'] / b['p99_ms']:.2f}x at p99"
            )
            goal = GOALS["speedup"].get(name)  # type: ignore[attr-defined]
            if goal:
                ratios.append(f"goal ≥ {goal:.0f}x: {verdict(speedup >= goal)}")
        if c:
            ratios.append(f"{c['per_second'] / rate:.2f}x the throughput")
        print(
            f"{name:24} {e2e['p50_ms']:8.2f} {e2e['p99_ms']:8.2f} {rate:7.0f}   "
            + "; ".join(ratios)
        )
    print()
    for name, peer in peers.items():
        if "error" in peer:
            continue
        print(f"{name} {peer['version']}: {peer['how']}.")
        print(f"  persists per run: {peer['persists']}.")
        for mode, stats in (peer.get("e2e_modes") or {}).items():
            print(f"  {mode}: p50 {stats['p50_ms']:.2f} ms, p99 {stats['p99_ms']:.2f} ms")
    print(
        "switchyard: a chain of lambda:invoke Tasks; persists per step the history events"
        " (TaskStateEntered … TaskStateExited), the frame, the task row and the execution row,"
        " one transaction per transition (batched under load)."
    )
