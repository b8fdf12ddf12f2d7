/**
 * The closed sets of states settle stores, one source each: the TypeScript types, the API's schemas
 * (domain/api-contract.ts) and the database's CHECK constraints (db/generated-checks.ts) derive from
 * these lists. Plain code, safe in the workflow bundle.
 */

/** How reconcile decided an event: the claim's outcome (`claims.outcome`). */
export const RECONCILE_OUTCOMES = ['applied', 'stale', 'unmatched', 'needs_review'] as const;
export type ReconcileOutcome = (typeof RECONCILE_OUTCOMES)[number];

/** Where a reminder delivery is (`reminders.state`). */
export const REMINDER_STATES = ['scheduled', 'processing', 'succeeded', 'failed', 'cancelled'] as const;
export type ReminderState = (typeof REMINDER_STATES)[number];
