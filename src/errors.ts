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
  /** Another attempt holds the delivery's lease; retried once it expires. */
  LeaseHeld: 'lease_held',
  /** A setting the activity needs (SETTLE_OUTBOUND_SECRET) is unset: retried until an operator sets it. */
  NotConfigured: 'not_configured',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Failures a retry cannot fix; the workflow's activity retry policy lists these as non-retryable. */
export const NON_RETRYABLE_ERROR_TYPES: string[] = [
  ErrorCode.IdempotencyKeyReused,
  ErrorCode.InvalidWorkflowInput,
  ErrorCode.DownstreamRejected,
  ErrorCode.TargetRefused,
];

/** PostgreSQL SQLSTATE classes mapped to settle's codes, in one place. */
export function codeForSqlState(sqlState: string | undefined): ErrorCode | undefined {
  if (!sqlState) return undefined;
  if (sqlState === '40001' || sqlState === '40P01') return ErrorCode.TransactionConflict;
  if (sqlState.startsWith('08') || sqlState === '57P01' || sqlState === '57P03')
    return ErrorCode.DatabaseUnavailable;
  return undefined;
}
