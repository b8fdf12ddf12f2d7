import type { ProviderAdapter } from './types';

/**
 * A place in a provider's list of events: the event and its creation time. Stored per provider as the
 * recovery cursor (db/recovery-cursor.ts): where its events were admitted up to, the newest event of
 * an unbroken run, in list order.
 */
export type RecoveryCursor = { eventId: string; createdAt: Date };

/** Where a listing begins: just after a position (the cursor), or at the first event created at or after a time. */
export type ListStart = { after: RecoveryCursor } | { since: Date };

/** One listed event: the provider's object, as its adapter reads it, and its place in the list. */
export type ListedEvent = { item: unknown; position: RecoveryCursor };

/**
 * Why a listing stopped. `rate_limited` and `unavailable` pass (the caller retries, after
 * `retryAfterMs` when the provider named one); `unauthorized` does not until an operator changes
 * the key; `cursor_gone`: the provider no longer lists the event the listing was to start after.
 */
export type RecoveryFaultKind = 'rate_limited' | 'unavailable' | 'unauthorized' | 'cursor_gone' | 'refused';

export class RecoveryFault extends Error {
  constructor(
    readonly kind: RecoveryFaultKind,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'RecoveryFault';
  }
}

/**
 * A provider's own list of the events it sent (or tried to): what the recovery sweep and `settle
 * recover` read to admit what never arrived. A second provider is one file implementing this.
 */
export interface RecoverySource {
  /** The provider's key in the registry. */
  readonly provider: string;
  /** Reads each listed event into settle's terms, exactly as the provider's webhook route does. */
  readonly adapter: ProviderAdapter;
  /**
   * The events of the types settle acts on, oldest first, from `start` to the newest; a fault ends
   * the iteration with a RecoveryFault. Stops between requests once `signal` aborts.
   */
  list(start: ListStart, signal?: AbortSignal): AsyncIterable<ListedEvent>;
}
