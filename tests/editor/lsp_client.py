"""A minimal Language Server Protocol client over stdio, enough to ask the YAML language server
for diagnostics and completions of a workflow file."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any


class LspClient:
    def __init__(self, command: list[str], root: Path) -> None:
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self._messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {"textDocument": {"publishDiagnostics": {}}},
            },
        )
        self.notify("initialized", {})
        self.notify(
            "workspace/didChangeConfiguration",
            {
                "settings": {
                    "yaml": {"validate": True, "completion": True, "schemaStore": {"enable": False}}
                }
            },
        )

    def _read(self) -> None:
        stream = self._process.stdout
        assert stream is not None
        while True:
            headers: dict[str, str] = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            body = stream.read(int(headers["content-length"]))
            self._messages.put(json.loads(body))

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        stdin = self._process.stdin
        assert stdin is not None
        stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        stdin.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any], timeout: float = 30) -> Any:
        self._next_id += 1
        request_id = self._next_id
        self._send({"id": request_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == request_id and "method" not in m, timeout)[
            "result"
        ]

    def wait(self, matches: Any, timeout: float = 30) -> dict[str, Any]:
        while True:
            message = self._messages.get(timeout=timeout)
            if message.get("method") == "workspace/configuration" and "id" in message:
                items = message["params"]["items"]
                self._send({"id": message["id"], "result": [{"validate": True} for _ in items]})
                continue
            if matches(message):
                return message

    def open(self, path: Path, text: str) -> list[dict[str, Any]]:
        """Open a document and return the diagnostics the server publishes for it."""
        uri = path.as_uri()
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}},
        )
        published = self.wait(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
            )
        )
        return list(published["params"]["diagnostics"])

    def complete(self, path: Path, line: int, character: int) -> list[str]:
        result = self.request(
            "textDocument/completion",
            {
                "textDocument": {"uri": path.as_uri()},
                "position": {"line": line, "character": character},
            },
        )
        items = result["items"] if isinstance(result, dict) else result
        return [item["label"] for item in items]

    def close(self) -> None:
        try:
            self.request("shutdown", {}, timeout=5)
            self.notify("exit", {})
        finally:
            self._process.kill()
            self._process.wait()
