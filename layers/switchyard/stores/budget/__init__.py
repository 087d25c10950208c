"""Budgets: reserve, settle and release money on run, step and tenant-daily scopes, atomically."""

from switchyard.stores.budget.dynamodb import DynamoDBBudgetLedger, create_budget_table
from switchyard.stores.budget.ledger import (
    BudgetLedger,
    Reservation,
    Scope,
    ScopeKind,
    ScopeLimit,
    ScopeTotals,
)
from switchyard.stores.budget.postgres import PostgresBudgetLedger

__all__ = [
    "BudgetLedger",
    "DynamoDBBudgetLedger",
    "PostgresBudgetLedger",
    "Reservation",
    "Scope",
    "ScopeKind",
    "ScopeLimit",
    "ScopeTotals",
    "create_budget_table",
]
