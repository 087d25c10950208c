"""Built-ins `sql.query` and `slack.post`, and declared tools of kind `python`."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row

from switchyard.contract.step_errors import PermanentError, StepError
from switchyard.model import SideEffect
from switchyard.runtime.tools.aws_tools import BuiltinTool
from switchyard.runtime.tools.base import CallInfo, ToolEnvironment
from switchyard.runtime.tools.http_tools import send_request
from switchyard.runtime.tools.sql_effects import (
    ensure_effects_table,
    operational_error,
    payload_hash,
    run_once,
)


class SqlQueryTool(BuiltinTool):
    """One statement on a named connection, values passed only as `%(name)s` parameters.

    The statement runs in its own transaction with a statement timeout. When the call's side
    effect is `idempotent`, that transaction also records the idempotency key and the result in
    `switchyard_sql_effects` (see `sql_effects`): a repeat of the key returns the stored result
    and does not run the statement again, whenever the previous attempt crashed. Give each named
    connection a database role that can do only what its workflows need.
    """

    name = "sql.query"
    records_own_effects = True
    """The gateway leaves idempotent calls to the tool's own transaction, not to Powertools."""

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        conninfo = env.sql_conninfo(str(args["connection"]))
        timeout_ms = max(int(call.timeout * 1000), 1)
        connect_timeout = max(int(call.timeout), 1)
        once = call.side_effect is SideEffect.IDEMPOTENT
        try:
            if once:
                ensure_effects_table(conninfo, connect_timeout=connect_timeout)
            with psycopg.connect(conninfo, connect_timeout=connect_timeout) as conn:
                conn.execute(f"SET statement_timeout = {timeout_ms}")

                def statement() -> dict[str, Any]:
                    return _execute(conn, args)

                if once:
                    return run_once(conn, call.idempotency_key, payload_hash(args), statement)
                return statement()
        except psycopg.OperationalError as exc:
            raise operational_error(exc) from None
        except psycopg.Error as exc:
            raise PermanentError(f"sql.query: {exc}".strip()) from None


def _execute(conn: psycopg.Connection[Any], args: dict[str, Any]) -> dict[str, Any]:
    with conn.cursor(row_factory=dict_row) as cursor:
        cursor.execute(str(args["query"]).encode(), args.get("params") or None)
        rows = cursor.fetchall() if cursor.description is not None else []
        rowcount = cursor.rowcount
    return {"rows": json.loads(json.dumps(rows, default=str)), "rowcount": rowcount}


class SlackPostTool(BuiltinTool):
    """Posts to a Slack incoming webhook whose URL is the named secret `webhook`."""

    name = "slack.post"

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        url = env.secrets.get(str(args["webhook"]))
        body: dict[str, Any] = {"text": args["text"]}
        if args.get("blocks"):
            body["blocks"] = args["blocks"]
        # The URL comes from an operator's secret, not from a model: no host allow-list check.
        response = send_request(
            env, call, method="POST", url=url, json_body=body, tool=self.name, check_host=False
        )
        return {"ok": response["status"] == 200}


@dataclass
class PythonTool:
    """A workflow's `kind: python` tool: `config.function` is `module:function`, called with the
    arguments as keyword arguments; it may raise a `StepError` to choose its error type."""

    name: str
    description: str
    input_schema: dict[str, Any]
    function: str
    declared_side_effect: SideEffect

    def side_effect(self, args: Mapping[str, Any]) -> SideEffect:
        return self.declared_side_effect

    def resolve(self, env: ToolEnvironment) -> Callable[..., Any]:
        if self.function in env.python_functions:
            return env.python_functions[self.function]
        module_name, _, attribute = self.function.partition(":")
        try:
            target: Any = importlib.import_module(module_name)
            for part in attribute.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as exc:
            raise PermanentError(f"{self.name}: cannot load {self.function}: {exc}") from None
        if not callable(target):
            raise PermanentError(f"{self.name}: {self.function} is not callable")
        return target  # type: ignore[no-any-return]

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        function = self.resolve(env)
        try:
            return function(**args)
        except StepError:
            raise
        except Exception as exc:
            raise PermanentError(f"{self.name}: {type(exc).__name__}: {exc}") from None
