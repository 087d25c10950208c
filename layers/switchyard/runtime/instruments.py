"""Powertools' logger, metrics and tracer, one of each per function and process.

Powertools configures a service's logger once: a second `Logger` of the service, with a handler
of its own, gets no formatter and fails on its first `append_keys`. A handler module imported
twice in one process (the engine's function registry and a test, say) must therefore share the
first one's. Every handler in `functions/` takes its instruments from here."""

from __future__ import annotations

import logging
import sys
import threading

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from switchyard.constants import METRICS_NAMESPACE, Metric, MetricDimension

_INSTRUMENTS: dict[str, tuple[Logger, Metrics, Tracer]] = {}
_LOCK = threading.Lock()


def instruments(function: str) -> tuple[Logger, Metrics, Tracer]:
    """The logger (to stderr, service `switchyard.<function>`), metrics (namespace `switchyard`,
    service `<function>`) and tracer of `functions/<function>`."""
    with _LOCK:
        found = _INSTRUMENTS.get(function)
        if found is None:
            logger = Logger(
                service=f"switchyard.{function}", logger_handler=logging.StreamHandler(sys.stderr)
            )
            metrics = Metrics(namespace=METRICS_NAMESPACE, service=function)
            found = (logger, metrics, Tracer(service=f"switchyard.{function}"))
            _INSTRUMENTS[function] = found
        return found


def function_logger(function: str) -> Logger:
    return instruments(function)[0]


def count_version_conflicts(metrics: Metrics, *, workflow: str | None, count: int) -> None:
    """`count` version conflicts (a writer that found the record changed under it and read it
    again) as EMF, beside the step functions' own (docs/runbooks.md#concurrent-updates)."""
    if count <= 0 or is_metrics_disabled():
        return
    metrics.add_dimension(name=MetricDimension.WORKFLOW, value=workflow or "unknown")
    metrics.add_metric(name=Metric.VERSION_CONFLICTS, unit=MetricUnit.Count, value=count)
    metrics.flush_metrics()
