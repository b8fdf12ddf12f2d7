/** The one place workflow IDs and downstream idempotency keys are derived. */

export function paymentWorkflowId(eventId: string): string {
  return `payment:${eventId}`;
}

export function reminderWorkflowId(deliveryId: string): string {
  return `reminder:${deliveryId}`;
}

/** Identical on every retry of the same effect: the event, the target and what is asked of it. */
export function downstreamIdempotencyKey(eventId: string, target: string, action: string): string {
  return `${eventId}:${target}:${action}`;
}
