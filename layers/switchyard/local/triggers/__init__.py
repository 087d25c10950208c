"""Triggers on the local engine: `schedule`, `webhook`, `event` and `queue` (docs/triggers.md).

service = TriggerService(pool, EngineCommands(engine), specs_of(catalog.entries()))
service.start()                                   # schedules and queues, in the background
app.include_router(trigger_router(service))       # /webhooks, /queues, /triggers
serve events_app(service) on --events-port        # EventBridge PutEvents
"""

from switchyard.local.triggers.http import events_app, trigger_router
from switchyard.local.triggers.service import TriggerService, specs_of
from switchyard.local.triggers.starter import Starter, TriggerSpec, trigger_specs
from switchyard.local.triggers.store import Delivery, TriggerStore

__all__ = [
    "Delivery",
    "Starter",
    "TriggerService",
    "TriggerSpec",
    "TriggerStore",
    "events_app",
    "specs_of",
    "trigger_router",
    "trigger_specs",
]
