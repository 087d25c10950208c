"""JSON for the engine's rows: frames to JSON and back, and a fast encoder for jsonb columns."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from switchyard.engine.interpreter.model import Children, Frame, FrameStatus, TaskSpec
from switchyard.records.jsonb import json_text

__all__ = ["frame_from_json", "frame_to_json", "json_text"]


def frame_to_json(frame: Frame) -> dict[str, Any]:
    return {
        "parent": frame.parent,
        "program": [list(part) for part in frame.program],
        "state": frame.state,
        "input": frame.input,
        "status": frame.status.value,
        "entered_at": frame.entered_at.isoformat() if frame.entered_at else None,
        "entered_event": frame.entered_event,
        "retries": frame.retries,
        "attempt": frame.attempt,
        "index": frame.index,
        "item": frame.item,
        "task": frame.task.to_json() if frame.task else None,
        "children": frame.children.to_json() if frame.children else None,
        "output": frame.output,
        "error": frame.error,
        "cause": frame.cause,
    }


def frame_from_json(frame_id: int, data: dict[str, Any]) -> Frame:
    entered = data.get("entered_at")
    return Frame(
        id=frame_id,
        parent=data["parent"],
        program=tuple((str(name), int(branch)) for name, branch in data["program"]),
        state=data["state"],
        input=data["input"],
        status=FrameStatus(data["status"]),
        entered_at=datetime.fromisoformat(entered) if entered else None,
        entered_event=data.get("entered_event", 0),
        retries=list(data.get("retries", [])),
        attempt=data.get("attempt", 0),
        index=data.get("index"),
        item=data.get("item"),
        task=TaskSpec.from_json(data["task"]) if data.get("task") else None,
        children=Children.from_json(data["children"]) if data.get("children") else None,
        output=data.get("output"),
        error=data.get("error"),
        cause=data.get("cause"),
        dirty=False,
    )
