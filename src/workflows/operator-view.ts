import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import {
  SettleDeliveryStateKey,
  SettleOutcomeKey,
  START_DELIVERY_STATE,
  type DeliveryState,
} from './search-attributes';
import type { OutboxEntry, PaymentWorkflowResult } from '../domain/workflow-contracts';

/** The patch that sends a workflow task's search-attribute changes as one upsert command. */
export const COALESCE_SEARCH_ATTRIBUTES_PATCH = 'coalesce-search-attributes';

/**
 * What an operator sees of a run in the Temporal UI: the search attributes SettleOutcome and
 * SettleDeliveryState and the run's current details. Activity summaries are set where each activity runs.
 *
 * Each upsert command is a billable action (https://docs.temporal.io/cloud/actions: one per command,
 * however many attributes it carries), and the server applies a task's commands only when the task
 * completes, so changes made within one workflow task are never seen one by one. So the view collects
 * the changes and `flush` sends them as one command before the workflow waits on the server (a timer,
 * a durable activity, the compensation) and when it ends; local activities run inside the task and do
 * not flush. A happy run thus upserts once (outcome and `delivered`), a retrying run shows `retrying`
 * during its wait. Only a local step outliving the task's heartbeat (about 8 s) shows the start's
 * `pending` until the task ends. Unpatched (runs started before the change): one command per change,
 * as they were recorded.
 */
export class OperatorView {
  private state: DeliveryState | null | undefined;
  /** What the run's attributes hold on the server: the start's, then each flush's. */
  private readonly shown = new Map<string, string | null>([
    [SettleDeliveryStateKey.name, START_DELIVERY_STATE],
  ]);
  private readonly pending = new Map<string, SearchAttributeUpdatePair>();

  constructor(private readonly coalesce: boolean) {}

  outcome(outcome: PaymentWorkflowResult['outcome']): void {
    this.set({ key: SettleOutcomeKey, value: outcome });
    setCurrentDetails(`outcome ${outcome}`);
  }

  deliveryState(state: DeliveryState | null, details?: string): void {
    if (state !== this.state) this.set({ key: SettleDeliveryStateKey, value: state });
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

  private set(pair: SearchAttributeUpdatePair): void {
    if (!this.coalesce) upsertSearchAttributes([pair]);
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
