/**
 * Stable error codes. They cross process boundaries (HTTP bodies, ApplicationFailure.type), where
 * `instanceof` does not, so code compares these strings.
 */
export const ErrorCode = {
  InvalidEvent: 'invalid_event',
  InvalidSignature: 'invalid_signature',
  IdempotencyKeyReused: 'idempotency_key_reused',
  MethodNotAllowed: 'method_not_allowed',
  PayloadTooLarge: 'payload_too_large',
  UnsupportedMediaType: 'unsupported_media_type',
  Unauthorized: 'unauthorized',
  NotFound: 'not_found',
  TemporalUnavailable: 'temporal_unavailable',
  DatabaseUnavailable: 'database_unavailable',
  /** A transaction lost a serialization or deadlock race: safe to retry. */
  TransactionConflict: 'transaction_conflict',
  /**
   * A payment run whose event settle's door (gateway, import, replay, recovery) never stored with this
   * payload: started around settle. Refused without effect, non-retryable (the failure says so itself).
   */
  UnadmittedRun: 'unadmitted_run',
  /**
   * An activity of a run whose workflow ID is not the one its input names (`payment:<event id>`,
   * `reminder:<delivery id>`): a copy of an input started under another ID. Refused without effect,
   * non-retryable.
   */
  WrongWorkflowId: 'wrong_workflow_id',
  /** The event failed validation inside the worker: retrying cannot help. */
  InvalidWorkflowInput: 'invalid_workflow_input',
  /** A reminder request failed validation (the body names the field paths). */
  InvalidReminder: 'invalid_reminder',
  /** The reminder already started delivering or finished: too late to cancel. */
  ReminderNotCancellable: 'reminder_not_cancellable',
  /** A downstream answered 5xx, timed out or could not be reached: retried with backoff. */
  DownstreamUnavailable: 'downstream_unavailable',
  /** A downstream answered 429/503 with Retry-After: retried after exactly that delay. */
  DownstreamThrottled: 'downstream_throttled',
  /** A downstream refused the call with a 4xx: permanent, the saga compensates. */
  DownstreamRejected: 'downstream_rejected',
  /** The target is a private or loopback address and SETTLE_ALLOW_PRIVATE_TARGETS is off. */
  TargetRefused: 'target_refused',
  /**
   * A reminder delivery asked for before the reminder's own due_at (a run started around settle with
   * an earlier `dueAt`): refused without sending, non-retryable.
   */
  ReminderNotDue: 'reminder_not_due',
  /** Another attempt holds the delivery's lease; retried once it expires. */
  LeaseHeld: 'lease_held',
  /** A setting the activity needs (SETTLE_OUTBOUND_SECRET) is unset: retried until an operator sets it. */
  NotConfigured: 'not_configured',
  /** PostgreSQL refused a value (SQLSTATE class 22 data exception, 54 program limit): retrying cannot help. */
  InvalidData: 'invalid_data',
  /**
   * A provider transmission ID (of a provider whose signature binds the body only weakly) already
   * taken with another body: the first stands, this one is refused (HTTP 409) and counted.
   */
  TransmissionReused: 'transmission_reused',
  /**
   * The provider's API (where settle holds its credentials) has no such event, or one that decides
   * otherwise: refused (HTTP 422) and counted, nothing admitted.
   */
  EventNotConfirmed: 'event_not_confirmed',
  /**
   * What verifying or confirming a provider's delivery needs from the provider (a signing certificate,
   * its API) could not be had: HTTP 503 with Retry-After, nothing acknowledged.
   */
  ProviderUnavailable: 'provider_unavailable',
  /** A path parameter is too long for any ID settle accepts (HTTP 414). */
  UriTooLong: 'uri_too_long',
  /** The request's headers (URL included) are larger than the server reads (HTTP 431). */
  HeadersTooLarge: 'headers_too_large',
  /** A request the HTTP layer could not read at all (HTTP 400 before any route). */
  BadRequest: 'bad_request',
  /** settle itself failed (HTTP 500): a bug, logged; the request may be retried. */
  Internal: 'internal_error',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Failures a retry cannot fix; the workflow's activity retry policy lists these as non-retryable. */
export const NON_RETRYABLE_ERROR_TYPES: string[] = [
  ErrorCode.IdempotencyKeyReused,
  ErrorCode.InvalidWorkflowInput,
  ErrorCode.DownstreamRejected,
  ErrorCode.TargetRefused,
];

/**
 * PostgreSQL SQLSTATE classes mapped to settle's codes, in one place. A serialization failure
 * (40001), a deadlock PostgreSQL broke by cancelling one side (40P01) or a lock timeout (55P03) is a
 * race lost to another transaction: the same transaction again can succeed. A connection failure
 * (class 08), a server shutting down or starting (57P01-57P03), out of connections (53300) or a
 * statement cancelled by its timeout (57014) means PostgreSQL is unavailable or too busy. A data
 * exception (class 22: NUL in text, bad encoding, bad JSON) or a program limit (class 54: too deep, too
 * complex) is about the value and never a reason for a 503.
 */
export function codeForSqlState(sqlState: string | undefined): ErrorCode | undefined {
  if (!sqlState) return undefined;
  if (isTransientConflict(sqlState)) return ErrorCode.TransactionConflict;
  if (
    sqlState.startsWith('08') ||
    /^57P0[123]$/.test(sqlState) ||
    sqlState === '53300' ||
    sqlState === '57014'
  )
    return ErrorCode.DatabaseUnavailable;
  if (sqlState.startsWith('22') || sqlState.startsWith('54')) return ErrorCode.InvalidData;
  return undefined;
}

/** A transaction that lost a race to another (serialization, deadlock, lock timeout): worth running again. */
export function isTransientConflict(sqlState: unknown): boolean {
  return sqlState === '40001' || sqlState === '40P01' || sqlState === '55P03';
}

/**
 * What a failed database call means for the caller: `unavailable` (worth a 503 and a retry: PostgreSQL
 * down or busy, or a race lost to another transaction), `invalid_data` (the value itself: a 400) or
 * `bug` (anything else: a 500). An error PostgreSQL answered carries a SQLSTATE and is classified by
 * it; an error without one is the connection failing (refused, reset, timed out), except a programming
 * error such as a TypeError.
 */
export function classifyDatabaseFailure(error: unknown): 'unavailable' | 'invalid_data' | 'bug' {
  const e = error as { code?: unknown; severity?: unknown };
  const answeredByPostgres = typeof e?.severity === 'string' && typeof e.code === 'string';
  if (answeredByPostgres) {
    const code = codeForSqlState(e.code as string);
    if (code === ErrorCode.DatabaseUnavailable || code === ErrorCode.TransactionConflict)
      return 'unavailable';
    if (code === ErrorCode.InvalidData) return 'invalid_data';
    return 'bug';
  }
  if (error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError) return 'bug';
  return 'unavailable';
}

/**
 * The stable code of a failure, for logs and metric labels: an ApplicationFailure's type, else the code
 * of a PostgreSQL error's SQLSTATE, else `unknown`.
 */
export function errorCodeOf(error: unknown): string {
  const e = error as { type?: unknown; code?: unknown };
  if (typeof e?.type === 'string' && e.type) return e.type;
  return codeForSqlState(typeof e?.code === 'string' ? e.code : undefined) ?? 'unknown';
}
