"""Ready tasks wait by priority, take turns across runs, go longest remaining path first within a
run, and respect each function's cap."""

from __future__ import annotations

import threading
from typing import Any

from switchyard.engine.dispatch.ready import PRIORITY_RANK, ReadyQueue, Waiting, task_priority
from switchyard.engine.dispatch.registry import FunctionSpec
from switchyard.engine.dispatch.workers import Dispatcher, TaskOutcome

HIGH, NORMAL, LOW = (PRIORITY_RANK[p] for p in ("high", "normal", "low"))


def drain(queue: ReadyQueue[str]) -> list[str]:
    taken: list[str] = []
    while (waiting := queue.take(lambda w: True)) is not None:
        taken.append(waiting.item)
    return taken


def test_a_higher_priority_goes_first_whatever_arrived_before() -> None:
    queue: ReadyQueue[str] = ReadyQueue()
    queue.put("f", "low", priority=LOW, run="a")
    queue.put("f", "normal", priority=NORMAL, run="b")
    queue.put("f", "high", priority=HIGH, run="c")
    assert drain(queue) == ["high", "normal", "low"]


def test_runs_of_one_priority_take_turns_whatever_their_sizes() -> None:
    queue: ReadyQueue[str] = ReadyQueue()
    for i in range(4):
        queue.put("f", f"big{i}", priority=NORMAL, run="fan-out")
    queue.put("f", "small0", priority=NORMAL, run="small")
    queue.put("f", "small1", priority=NORMAL, run="small")
    assert drain(queue) == ["big0", "small0", "big1", "small1", "big2", "big3"]


def test_a_run_never_served_goes_before_one_that_just_was() -> None:
    queue: ReadyQueue[str] = ReadyQueue()
    queue.put("f", "big0", priority=NORMAL, run="fan-out")
    assert drain(queue) == ["big0"]  # the fan-out's first task ran at once
    for i in range(1, 4):
        queue.put("f", f"big{i}", priority=NORMAL, run="fan-out")
    queue.put("f", "small0", priority=NORMAL, run="small")
    assert drain(queue)[0] == "small0"


def test_a_task_whose_function_is_at_its_cap_keeps_its_place() -> None:
    queue: ReadyQueue[str] = ReadyQueue()
    queue.put("agent", "agent-task", priority=HIGH, run="a")
    queue.put("tool", "tool-task", priority=NORMAL, run="b")
    taken = queue.take(lambda w: w.function != "agent")
    assert taken == Waiting("tool", "tool-task")
    assert drain(queue) == ["agent-task"]


def test_within_a_run_the_longest_remaining_path_goes_first_then_arrival() -> None:
    queue: ReadyQueue[str] = ReadyQueue()
    queue.put("f", "short", priority=NORMAL, run="a", remaining=1)
    queue.put("f", "long", priority=NORMAL, run="a", remaining=3)
    queue.put("f", "middle0", priority=NORMAL, run="a", remaining=2)
    queue.put("f", "middle1", priority=NORMAL, run="a", remaining=2)
    assert drain(queue) == ["long", "middle0", "middle1", "short"]


def test_the_longest_path_does_not_jump_the_turns_of_other_runs() -> None:
    queue: ReadyQueue[str] = ReadyQueue()
    queue.put("f", "a-short", priority=NORMAL, run="a", remaining=1)
    queue.put("f", "a-long", priority=NORMAL, run="a", remaining=5)
    queue.put("f", "b", priority=NORMAL, run="b", remaining=1)
    assert drain(queue) == ["a-long", "b", "a-short"]


def test_a_longer_path_at_its_functions_cap_lets_a_shorter_one_run() -> None:
    queue: ReadyQueue[str] = ReadyQueue()
    queue.put("capped", "long", priority=NORMAL, run="a", remaining=3)
    queue.put("free", "short", priority=NORMAL, run="a", remaining=1)
    taken = queue.take(lambda w: w.function != "capped")
    assert taken is not None and taken.item == "short"
    assert drain(queue) == ["long"]


def test_unfair_is_arrival_order() -> None:
    queue: ReadyQueue[str] = ReadyQueue(fair=False)
    queue.put("f", "big0", priority=NORMAL, run="fan-out")
    queue.put("f", "long", priority=NORMAL, run="fan-out", remaining=9)
    queue.put("f", "big1", priority=NORMAL, run="fan-out")
    queue.put("f", "small", priority=HIGH, run="small")
    assert drain(queue) == ["big0", "long", "big1", "small"]


def test_a_task_priority_is_its_runs() -> None:
    assert task_priority({"context": {"run": {"id": "r", "priority": "high"}}}) == HIGH
    assert task_priority({"context": {"run": {"id": "r", "priority": "low"}}}) == LOW
    assert task_priority({"context": {"run": {"id": "r"}}}) == NORMAL
    assert task_priority({"context": {"run": {"priority": "urgent"}}}) == NORMAL
    assert task_priority(["not", "a", "step"]) == NORMAL


def test_the_dispatcher_runs_at_most_its_workers_and_each_function_at_its_cap() -> None:
    lock = threading.Lock()
    running: dict[str, int] = {"total": 0, "agent": 0}
    peak: dict[str, int] = {"total": 0, "agent": 0}
    done = threading.Semaphore(0)
    release = threading.Event()

    def job(function: str, key: int) -> Any:
        def run() -> TaskOutcome:
            with lock:
                for name in ("total", function):
                    if name in running:
                        running[name] += 1
                        peak[name] = max(peak[name], running[name])
            release.wait(5)
            with lock:
                for name in ("total", function):
                    if name in running:
                        running[name] -= 1
            return TaskOutcome((key, 0, 0), True)

        return run

    dispatcher = Dispatcher(None, workers=3, on_outcome=lambda outcome: done.release())  # type: ignore[arg-type]
    agent = FunctionSpec("agent", lambda e, c: None, concurrency=1)
    tool = FunctionSpec("tool", lambda e, c: None, concurrency=10)
    try:
        for key in range(4):
            dispatcher.submit(agent, job("agent", key), run=key)
        for key in range(4, 10):
            dispatcher.submit(tool, job("tool", key), run=key)
        release.set()
        for _ in range(10):
            assert done.acquire(timeout=10)
    finally:
        dispatcher.shutdown()
    assert peak == {"total": 3, "agent": 1}
