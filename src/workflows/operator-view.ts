import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { SettleDeliveryStateKey, SettleOutcomeKey, type DeliveryState } from './search-attributes';
import type { OutboxEntry, PaymentWorkflowResult } from '../domain/workflow-contracts';

/**
 * How a run shows itself, by the patches its history carries (payment-shape.ts): `per-change` (before
 * the coalesce patch: one upsert command per change), `coalesced` (every change, one command per
 * flush), `exceptions` (only what leaves the happy path, one command per flush).
 */
export type ViewShape = 'per-change' | 'coalesced' | 'exceptions';

/** Whether a delivery state takes a run off the happy path (SPEC.md, "Operator surface"). */
function isOffTheHappyPath(state: DeliveryState | null): boolean {
  return state === 'retrying' || state === 'compensated' || state === 'not_configured';
}

/**
 * What an operator sees of a run in the Temporal UI: the search attributes SettleOutcome and
 * SettleDeliveryState and the run's current details. Activity summaries are set where each activity runs.
 *
 * In the `exceptions` shape, SettleOutcome is set once the outcome is other than `applied`, and
 * SettleDeliveryState once the deliveries are retrying, compensated or not_configured; each is kept
 * current from then on. A run that never leaves the happy path sets neither: a Completed run without
 * them was applied and delivered, at no upsert.
 *
 * Each upsert command is a billable action (https://docs.temporal.io/cloud/actions: one per command,
 * however many attributes it carries), and the server applies a task's commands only when the task
 * completes, so changes made within one workflow task are never seen one by one. So the view collects
 * the changes and `flush` sends them as one command before the workflow waits on the server (a timer,
 * a durable activity, the compensation) and when it ends; local activities run inside the task and do
 * not flush. A retrying run shows `retrying` during its wait.
 */
export class OperatorView {
  private state: DeliveryState | null | undefined;
  /** What the run's attributes hold on the server: the start's, then each flush's. */
  private readonly shown = new Map<string, string | null>();
  private readonly pending = new Map<string, SearchAttributeUpdatePair>();

  constructor(private readonly shape: ViewShape) {
    // A run started by a gateway from before the exceptions shape carries SettleDeliveryState `pending`.
    const started = workflowInfo().typedSearchAttributes.get(SettleDeliveryStateKey);
    if (started !== undefined) this.shown.set(SettleDeliveryStateKey.name, started);
  }

  outcome(outcome: PaymentWorkflowResult['outcome']): void {
    if (this.shows(SettleOutcomeKey.name, outcome !== 'applied')) {
      this.set({ key: SettleOutcomeKey, value: outcome });
    }
    setCurrentDetails(`outcome ${outcome}`);
  }

  deliveryState(state: DeliveryState | null, details?: string): void {
    if (state !== this.state && this.shows(SettleDeliveryStateKey.name, isOffTheHappyPath(state))) {
      this.set({ key: SettleDeliveryStateKey, value: state });
    }
    this.state = state;
    setCurrentDetails(details ?? (state ? `deliveries ${state}` : 'nothing to deliver'));
  }

  /** Sends the changes not yet shown as one upsert command (none if nothing changed). */
  flush(): void {
    const changed = [...this.pending.values()].filter((pair) => this.shown.get(pair.key.name) !== pair.value);
    this.pending.clear();
    if (changed.length === 0) return;
    upsertSearchAttributes(changed);
    for (const pair of changed) this.shown.set(pair.key.name, pair.value as string | null);
  }

  /** Whether a change of this attribute is shown: always before the exceptions shape; in it, once off the happy path. */
  private shows(name: string, offTheHappyPath: boolean): boolean {
    return this.shape !== 'exceptions' || offTheHappyPath || this.shown.has(name) || this.pending.has(name);
  }

  private set(pair: SearchAttributeUpdatePair): void {
    if (this.shape === 'per-change') upsertSearchAttributes([pair]);
    else this.pending.set(pair.key.name, pair);
  }
}

/** The delivery state rows stand for; null when the event has nothing to deliver. */
export function storedDeliveryState(outbox: Pick<OutboxEntry, 'status'>[]): DeliveryState | null {
  if (outbox.length === 0) return null;
  const statuses = new Set(outbox.map((row) => row.status));
  if (statuses.has('compensated') || statuses.has('failed')) return 'compensated';
  if (statuses.has('not_configured')) return 'not_configured';
  if (statuses.has('pending')) return 'pending';
  return 'delivered';
}
