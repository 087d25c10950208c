"""Triggers on the local engine: `schedule`, `webhook`, `event` and `queue` (docs/triggers.md).

Installing a workflow records its triggers in the database (`store.record_installed`); every
engine process serves those of its database:

service = TriggerService(pool, EngineCommands(engine))  # the installed workflows' triggers
service.start()                                   # schedules and queues, in the background
app.include_router(trigger_router(service))       # /webhooks, /queues, /triggers (dev only)
serve events_app(service) on --events-port        # EventBridge PutEvents (dev only)

The HTTP faces (`trigger_router`, `events_app`) are in `local.triggers.http`, imported from there
only: installing a workflow imports this package, and should not import a web framework.
"""

from switchyard.local.triggers.service import TriggerService
from switchyard.local.triggers.starter import (
    Starter,
    TriggerSpec,
    specs_of_workflow,
    trigger_specs,
)
from switchyard.local.triggers.store import Delivery, InstalledTriggers, TriggerStore

__all__ = [
    "Delivery",
    "InstalledTriggers",
    "Starter",
    "TriggerService",
    "TriggerSpec",
    "TriggerStore",
    "specs_of_workflow",
    "trigger_specs",
]
