"""A realistic agent-team session (50 messages): refactoring a billing service. Decisions are stated in
several ways, some questions are answered later in the session and some stay open; a second run answers
most of the open ones and adds decisions."""

from __future__ import annotations

from typing import Any

SCOPE = {
    "graph_nodes": ["repo:billing-service", "module:invoices", "module:tax"],
    "tags": ["refactor", "project_state"],
}

SESSION_SUMMARY = (
    "Refactored the billing service's invoice generation: batched line-item loading cut the month-end run "
    "from 40 to 6 minutes; tax calculation is moving to its own module; rounding rules and the production "
    "rollout are still open."
)

TRANSCRIPT = [
    "maya: Today we start refactoring the billing service so invoices stop timing out at month end.",
    "planner: The invoice generator in billing/invoices.py does one query per line item, which is why "
    "month-end runs take forty minutes.",
    "coder: I profiled it with `make profile-billing` and 80% of the time is spent in the ORM loading line "
    "items one by one.",
    "planner: We decided to batch line-item loading with a single prefetch query per invoice.",
    "reviewer: Should we keep the legacy CSV export while we refactor?",
    "maya: Yes, keep the CSV export until finance confirms they have moved to the new API.",
    "coder: Do we need to support invoices in multiple currencies in this refactor?",
    "planner: Let me check the contracts first.",
    "coder: I split billing/invoices.py into billing/invoice_builder.py and billing/line_items.py.",
    "reviewer: The split looks good, tests are green.",
    "tester: I ran `pytest tests/billing -q` and all 214 tests pass.",
    "planner: We will move tax calculation into its own module, billing/tax.py, because it is duplicated in "
    "three places.",
    "reviewer: What rounding mode does finance expect for tax, banker's rounding or half-up?",
    "coder: Not sure, the old code uses both in different places.",
    "maya: I'll ask finance about the rounding rule; it is blocked on the finance team review.",
    "coder: Going with Decimal everywhere instead of floats for money amounts, since floats caused the penny "
    "drift bug last quarter.",
    "reviewer: Agreed, money must never be stored as a float.",
    "tester: Don't rerun the full invoice backfill on staging; it takes six hours and we already verified "
    "the output.",
    "planner: Next up is the PDF renderer in billing/pdf.py.",
    "planner: Multi-currency: the contracts only use EUR, so we decided not to support multiple currencies "
    "in this refactor.",
    "coder: How should we handle invoices that were generated with the old rounding?",
    "reviewer: Good question, we need the rounding answer first.",
    "coder: Is the PDF renderer thread-safe?",
    "tester: No, the PDF renderer keeps global state, so we run it in a single worker for now.",
    "planner: We will replace the PDF library with WeasyPrint next sprint.",
    "coder: The new invoice builder cut the month-end run from forty minutes to six minutes in staging.",
    "maya: Great result. Let's keep the old code path behind a feature flag for one release.",
    "reviewer: The feature flag is billing.use_new_builder in settings/billing.yaml.",
    "tester: Staging dashboard: https://grafana.example.com/d/billing-month-end",
    "coder: Where do we log invoice generation failures today?",
    "planner: We log invoice generation failures to the billing-errors Sentry project; we checked and it "
    "works.",
    "reviewer: Decision: invoice numbers stay sequential per tenant, because auditors rely on gap-free "
    "numbering.",
    "coder: I will add a database constraint for that.",
    "tester: Should we also test leap-year billing periods?",
    "planner: Yes, add leap-year cases to the billing period tests.",
    "coder: Added tests/billing/test_periods.py with leap-year cases.",
    "reviewer: Can you also update the runbook?",
    "coder: Updated docs/runbooks/billing.md with the new month-end procedure.",
    "maya: What is the rollout plan for the new builder in production?",
    "planner: We still need to figure out whether to roll out per tenant or all at once.",
    "tester: The load test with 50k invoices finished in 9 minutes.",
    "coder: Do we need an index on line_items.invoice_id for the new prefetch query?",
    "reviewer: The batch size of 500 line items looked like the sweet spot.",
    "planner: We chose a batch size of 500 line items for the prefetch.",
    "coder: Deleting the unused billing/legacy_export_v1.py module.",
    "tester: Already tried caching tax rates in Redis; it did not help because the lookups were not the "
    "bottleneck.",
    "maya: Who owns the WeasyPrint migration?",
    "planner: I will take the WeasyPrint migration.",
    "coder: Summary of the session: builder split done, tax module in progress, PDF renderer next.",
    "maya: Good work, let's pick this up tomorrow with the rounding answer.",
]

ARTEFACTS: dict[str, Any] = {
    "files_changed": [
        "billing/invoice_builder.py",
        "billing/line_items.py",
        "billing/tax.py",
        "tests/billing/test_periods.py",
        "docs/runbooks/billing.md",
    ],
    "commands": ["make profile-billing", "pytest tests/billing -q"],
    "dashboards": ["https://grafana.example.com/d/billing-month-end"],
    "metrics": {"month_end_minutes_before": 40, "month_end_minutes_after": 6},
}

EVIDENCE = {"session_summary": SESSION_SUMMARY, "transcripts": TRANSCRIPT, "artefacts": ARTEFACTS}

# The decisions stated in the session (a distinctive phrase of each).
STATED_DECISIONS = [
    "batch line-item loading",
    "tax calculation into its own module",
    "Decimal everywhere",
    "not to support multiple currencies",
    "replace the PDF library with WeasyPrint",
    "old code path behind a feature flag",
    "invoice numbers stay sequential per tenant",
    "batch size of 500",
]
# Questions asked and still open at the end of the session.
OPEN_QUESTIONS = [
    "What rounding mode does finance expect",
    "How should we handle invoices that were generated with the old rounding",
    "What is the rollout plan for the new builder in production",
    "roll out per tenant or all at once",
    "Do we need an index on line_items.invoice_id",
]
# Questions asked and answered later in the same session, and a request that is not a question.
ANSWERED_QUESTIONS = [
    "legacy CSV export",
    "multiple currencies",
    "thread-safe",
    "log invoice generation failures",
    "leap-year billing periods",
    "Who owns the WeasyPrint migration",
    "update the runbook",
]

SECOND_SESSION = {
    "session_summary": (
        "Finance answered the rounding question and the production rollout plan was agreed; the tax module "
        "is finished."
    ),
    "transcripts": [
        "maya: Finance confirmed that tax uses half-up rounding on each invoice line, not banker's rounding.",
        "planner: The production rollout plan is agreed: we decided to roll out the new builder per tenant, "
        "starting with the three smallest tenants.",
        "coder: The tax module in billing/tax.py is finished and all call sites use it.",
        "coder: For invoices generated with the old rounding we will keep them unchanged and issue "
        "correction notes.",
        "tester: Should the correction notes be emailed to customers automatically?",
        "planner: We will use WeasyPrint 62 for the PDF renderer and pin it in requirements.txt.",
        "maya: Decision: invoice numbers stay sequential per tenant, because auditors rely on gap-free "
        "numbering.",
        "coder: Ran `make migrate-billing` on staging without errors.",
        "reviewer: Never bypass the tax module when computing totals.",
    ],
    "artefacts": {
        "files_changed": ["billing/tax.py", "billing/corrections.py"],
        "commands": ["make migrate-billing"],
    },
}
NEW_DECISIONS = ["roll out the new builder per tenant", "issue correction notes", "WeasyPrint 62"]
ANSWERED_IN_SECOND_SESSION = OPEN_QUESTIONS[:4]
STILL_OPEN_AFTER_SECOND_SESSION = [OPEN_QUESTIONS[4], "Should the correction notes be emailed"]
