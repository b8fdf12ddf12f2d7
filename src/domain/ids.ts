/** The one place workflow IDs and downstream idempotency keys are derived. */

export function paymentWorkflowId(eventId: string): string {
  return `payment:${eventId}`;
}

export function reminderWorkflowId(deliveryId: string): string {
  return `reminder:${deliveryId}`;
}

/**
 * The event or reminder delivery a workflow ID stands for (the inverse of the two above), so that an
 * activity's logs can name it from the workflow it runs for; undefined for any other workflow (the purge).
 */
export function subjectOfWorkflowId(workflowId: string): string | undefined {
  const match = /^(?:payment|reminder):(.+)$/.exec(workflowId);
  return match?.[1];
}

/** Identical on every retry of the same effect: the event, the target and what is asked of it. */
export function downstreamIdempotencyKey(eventId: string, target: string, action: string): string {
  return `${eventId}:${target}:${action}`;
}
