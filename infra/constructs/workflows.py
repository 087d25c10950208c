"""The deployed workflows: one nested stack each, and the dead-letter queue of failed steps.

A CloudFormation stack holds at most 500 resources, and a workflow brings a dozen or more (its
machine, version, aliases, role, log group, metric filters, API route, its triggers). So each
workflow gets a nested stack of its own (infra/stacks/workflow.py), and the top-level stack holds
the platform plus one resource per workflow. Why one per workflow and not one per group of N:

- a workflow's resources never move between stacks. With groups, adding a workflow could move
  others to another group, and a resource with a physical name (the machine, its log group)
  cannot be created in the new stack before the old stack deletes it;
- sub-workflow references follow the workflows' own graph, which has no cycles. Two groups can
  each hold a parent of a child in the other, and nested stacks that reference each other cannot
  be deployed;
- a deploy updates only the nested stacks whose template or parameters changed.

Children are deployed before their parents: a parent's stack takes its child's alias ARN as a
parameter (an output of the child's stack), so CloudFormation creates the child first.
"""

from __future__ import annotations

from aws_cdk import aws_events as events
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.catalog import CompiledMachine
from infra.config import Settings
from infra.constructs.api import Api
from infra.constructs.functions import Functions
from infra.constructs.state_store import StateStore
from infra.constructs.workflow_machine import WorkflowMachine, dead_letter_queue
from infra.stacks.nested import Platform
from infra.stacks.workflow import WorkflowStack


def _ordered(machines: list[CompiledMachine]) -> list[CompiledMachine]:
    """Children before their parents (the validator rules out cycles)."""
    by_name = {m.name: m for m in machines}
    done: dict[str, CompiledMachine] = {}

    def visit(machine: CompiledMachine) -> None:
        if machine.name in done:
            return
        for child in machine.children:
            visit(by_name[child.workflow])
        done[machine.name] = machine

    for machine in machines:
        visit(machine)
    return list(done.values())


class Workflows(Construct):
    """The steps' dead-letter queue, and one `WorkflowStack` per compiled machine."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        store: StateStore,
        functions: Functions,
        api: Api,
        bus: events.IEventBus,
        alarms: sns.ITopic,
        machines: list[CompiledMachine],
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letters = dead_letter_queue(self, "StepDeadLetters")
        platform = Platform(
            settings=settings,
            store=store,
            functions=functions,
            api=api,
            bus=bus,
            step_dead_letters=self.dead_letters,
            alarms=alarms,
        )
        pinned = {
            (child.workflow, child.version)
            for machine in machines
            for child in machine.children
            if child.version is not None
        }
        self.stacks: dict[str, WorkflowStack] = {}
        deployed: dict[str, WorkflowMachine] = {}
        for compiled in _ordered(machines):
            stack = WorkflowStack(
                self,
                _pascal(compiled.name),
                platform=platform,
                compiled=compiled,
                children={c.workflow: deployed[c.workflow] for c in compiled.children},
                pinned=(compiled.name, compiled.version) in pinned,
            )
            self.stacks[compiled.name] = stack
            deployed[compiled.name] = stack.machine


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("_", "-").split("-"))
