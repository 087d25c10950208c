"""Approvals people act on: signed links by e-mail and Slack, the approval page, and the routes
that decide through them (docs/approvals.md)."""

from switchyard.approvals.links import LinkClaims, LinkExpiredError, LinkInvalidError, LinkSigner
from switchyard.approvals.notify import approval_notifiers, print_links_to
from switchyard.approvals.people import People, PeopleError, Person
from switchyard.approvals.routes import LinkPathFilter, approvals_router, build_approvals_router
from switchyard.approvals.service import ApprovalError, ApprovalService, LinkBook
from switchyard.approvals.settings import ApprovalSettings

__all__ = [
    "ApprovalError",
    "ApprovalService",
    "ApprovalSettings",
    "LinkBook",
    "LinkClaims",
    "LinkExpiredError",
    "LinkInvalidError",
    "LinkPathFilter",
    "LinkSigner",
    "People",
    "PeopleError",
    "Person",
    "approval_notifiers",
    "approvals_router",
    "build_approvals_router",
    "print_links_to",
]
