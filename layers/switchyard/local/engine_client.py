"""The engine a command talks to: its own (when no engine owns the database yet) or the one
already running, reached through the database's command queue."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Protocol

from switchyard.constants import DATABASE_URL_ENV
from switchyard.engine import remote
from switchyard.engine.commands import Callback, StartExecution, StopExecution
from switchyard.engine.engine import Engine
from switchyard.engine.ownership import Ownership
from switchyard.engine.serve import EngineProcess
from switchyard.gates import TaskCallbacks
from switchyard.local.database import data_dir, is_embedded


class EngineClient(TaskCallbacks, Protocol):
    in_process: bool

    def start_execution(
        self, machine_arn: str, name: str, data: Any, options: dict[str, Any]
    ) -> str: ...

    def close(self) -> None: ...


class EngineCommands:
    """Commands to an engine started in this process, through its coordinator: what a server
    beside the engine (the REST API of `switchyard dev`) starts runs and sends decisions with."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def start_execution(
        self, machine_arn: str, name: str, data: Any, options: dict[str, Any]
    ) -> str:
        started = self.engine.submit(StartExecution(machine_arn, name, data, options=options))
        return str(started["executionArn"])

    def send_success(self, token: str, output: Any) -> None:
        self.engine.submit(Callback(token, "success", output=output))

    def send_failure(self, token: str, error: str, cause: str) -> None:
        self.engine.submit(Callback(token, "failure", error=error, cause=cause))

    def stop(self, execution_arn: str, error: str, cause: str) -> None:
        self.engine.submit(StopExecution(execution_arn, error, cause))


class InProcessEngine(EngineCommands):
    """This process owns the database: the engine runs here while the command follows a run.
    Other commands (another terminal's `switchyard approve`) reach it through its listener."""

    in_process = True

    def __init__(self, process: EngineProcess) -> None:
        super().__init__(process.engine)
        self._process = process

    def close(self) -> None:
        self._process.close()


class RemoteEngine:
    """An engine elsewhere owns the database: talk to it through `engine_commands`."""

    in_process = False

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo

    def start_execution(
        self, machine_arn: str, name: str, data: Any, options: dict[str, Any]
    ) -> str:
        payload = {"machine_arn": machine_arn, "name": name, "input": data, "options": options}
        result = remote.send(self._conninfo, "start", payload)
        return str(result["executionArn"])

    def send_success(self, token: str, output: Any) -> None:
        remote.send(self._conninfo, "task_success", {"token": token, "output": output})

    def send_failure(self, token: str, error: str, cause: str) -> None:
        remote.send(
            self._conninfo, "task_failure", {"token": token, "error": error, "cause": cause}
        )

    def stop(self, execution_arn: str, error: str, cause: str) -> None:
        remote.send(self._conninfo, "stop", {"arn": execution_arn, "error": error, "cause": cause})

    def close(self) -> None:
        return None


class FunctionTokens:
    """How the functions an engine runs in this process answer a task token themselves: through
    the command queue of the database the engine gave them (DATABASE_URL), which its listener
    takes commands from."""

    def _engine(self) -> RemoteEngine:
        conninfo = os.environ.get(DATABASE_URL_ENV)
        if not conninfo:
            raise RuntimeError("no DATABASE_URL: this process runs no engine's functions")
        return RemoteEngine(conninfo)

    def send_success(self, token: str, output: Any) -> None:
        self._engine().send_success(token, output)

    def send_failure(self, token: str, error: str, cause: str) -> None:
        self._engine().send_failure(token, error, cause)

    def stop(self, execution_arn: str, error: str, cause: str) -> None:
        self._engine().stop(execution_arn, error, cause)


def connect(conninfo: str, *, functions_dir: Path | None = None) -> EngineClient:
    """Own the database if no engine does (run one here), else talk to the owner."""
    from switchyard.local.stack import engine_process

    process = engine_process(conninfo, functions_dir=functions_dir)
    if process.start(wait=False):
        return InProcessEngine(process)
    return RemoteEngine(conninfo)


def engine_running(conninfo: str) -> bool:
    return Ownership.owner_pid(conninfo) is not None


def start_background_engine(conninfo: str, *, wait_seconds: float = 15.0) -> int:
    """Start the background engine (`python -m switchyard.local.background`: the engine with
    the triggers of its database) detached; returns its pid once it owns the database (it waits
    for the lock if another engine is closing). On the embedded server the engine opens it
    itself, as one more of its users, so the server lives as long as the engine (not as long as
    this command, which may exit at once)."""
    log_path = data_dir() / "engine.log"
    command = [sys.executable, "-m", "switchyard.local.background"]
    env = dict(os.environ)
    if is_embedded(conninfo):
        env.pop(DATABASE_URL_ENV, None)  # set by an engine this process ran, for its handlers
    else:
        command += ["--database-url", conninfo]
    with log_path.open("ab") as log:
        child = subprocess.Popen(
            command,
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    (data_dir() / "engine.pid").write_text(str(child.pid))
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        if engine_running(conninfo):
            return child.pid
        if child.poll() is not None:
            raise RuntimeError(f"the background engine exited ({child.returncode}); see {log_path}")
        time.sleep(0.1)
    raise RuntimeError(f"the background engine did not take the database in time; see {log_path}")


def ensure_engine(conninfo: str) -> EngineClient:
    """An engine for a one-off command (approve, resume, ...): the running one, else a new
    background engine, which goes on after this command exits."""
    if not engine_running(conninfo):
        start_background_engine(conninfo)
    return RemoteEngine(conninfo)
