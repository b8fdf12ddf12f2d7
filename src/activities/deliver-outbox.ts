import { ApplicationFailure } from '@temporalio/activity';
import { logger } from '../lib/logger';
import { shortHash } from '../lib/hash';
import {
  findOutboxRow,
  markOutboxDelivered,
  markOutboxNotConfigured,
  recordOutboxError,
  startOutboxAttempt,
  type OutboxRow,
  type StartedOutboxRow,
} from '../db/outbox';
import { ErrorCode } from '../domain/errors';
import {
  deliveryTarget,
  isDeliverable,
  OUTBOX_TARGETS,
  callAudience,
  targetEndpoint,
  type OutboxStatus,
  type OutboxTarget,
} from '../domain/outbox';
import type { OutboxDeliveryResult, OutboxInput } from '../domain/workflow-contracts';
import {
  callDownstream,
  countDelivery,
  failureFor,
  targetCallPolicy,
  type DeliveryDependencies,
} from './downstream';
import { enterTarget, leaveTarget } from './target-gate';
import { annotateSpan } from '../tracing/tracing';
import { paymentWorkflowId } from '../domain/ids';
import { actOnlyFor, eventOfCurrentRun } from './run-subject';

/**
 * Delivers one outbox row: one call per attempt, with the row's `Idempotency-Key`, identical on every
 * retry, so the receiver can refuse a repeat of an ambiguous call, and signed (Standard Webhooks, the
 * `webhook-id` being that key) with the first of the target's secrets, else SETTLE_OUTBOUND_SECRET's.
 * Every attempt is counted on the row before it is made and its failure recorded after. A 2xx marks
 * it `delivered` (a target that `releasesShipment` also marks the shipment `released`); a refusal (a
 * 4xx from an `internal` target, targetCallPolicy) marks it `failed` and throws non-retryable
 * `downstream_rejected`; 5xx, timeouts and 429/503 (with their Retry-After) throw retryable failures.
 * The URL may reach private addresses when the target's `network` is `private`. A target with no URL or no signing secret on this worker parks the row as
 * `not_configured` (an exception, logged at warn): a replay delivers it once the target is configured.
 * Each call passes its target's gate first (target-gate.ts): its limits, a pause or a failing target
 * hold it as a retryable `downstream_throttled` failure, with no call made and no attempt counted.
 */
export async function deliverOutboxRow(
  deps: DeliveryDependencies,
  input: OutboxInput,
): Promise<OutboxDeliveryResult> {
  return (await deliverOutboxRowThenStart(deps, input)).result;
}

/**
 * deliverOutboxRow as the first pass runs it along an event's rows: `started` is this row as the
 * delivery before it returned it, its attempt counted already; `next`, the row to deliver after it,
 * whose attempt is counted with this one's `delivered` (one statement for both) and returned as
 * `nextStarted`, ready to be sent. Undefined when this row did not deliver, or `next` was not started
 * (no longer pending, or its target is not configured here): deliverOutboxRow then says why.
 */
export async function deliverOutboxRowThenStart(
  deps: DeliveryDependencies,
  input: OutboxInput,
  started?: StartedOutboxRow,
  next?: OutboxInput,
): Promise<{ result: OutboxDeliveryResult; nextStarted?: StartedOutboxRow }> {
  const configured = OUTBOX_TARGETS.filter((target) => isConfigured(deps, target));
  // Only a row of the event this run's workflow ID names is attempted; another's is refused below.
  const eventId = eventOfCurrentRun();
  // The common path is one statement: the attempt is counted and the row read together.
  const row =
    started?.outboxId === input.outboxId
      ? started
      : await startOutboxAttempt(deps.pool, input.outboxId, configured, eventId);
  if (!row) return { result: await notAttempted(deps, input.outboxId) };
  // Only a configured target's row is attempted (startOutboxAttempt picks by `configured`).
  const endpoint = targetEndpoint(deps.config, row.target) as { url: string; signingSecret: string };
  const call = targetCallPolicy(deps.config, deliveryTarget(row.target));
  annotateSpan({ shipmentId: row.shipmentId });
  const gate = { pool: deps.pool, config: deps.config, requestTimeoutMs: deps.tuning.requestTimeoutMs };
  const pass = await enterTarget(gate, row.target, row.targetTroubled, row.outboxId);

  const called = await callDownstream(
    deps.http,
    {
      url: endpoint.url,
      idempotencyKey: row.idempotencyKey,
      signingSecret: endpoint.signingSecret,
      audience: callAudience({ target: row.target }),
      body: { action: row.action, ...row.body },
      timeoutMs: deps.tuning.requestTimeoutMs,
      allowPrivateTargets: call.allowPrivateTargets,
    },
    call.policy,
  );
  countDelivery(row.target, row.action, called);
  const outcome = await leaveTarget(gate, row.target, pass, called);
  if (outcome.kind === 'delivered') {
    const release = deliveryTarget(row.target).releasesShipment;
    const nextStarted = await markOutboxDelivered(
      deps.pool,
      row.outboxId,
      release ? row.shipmentId : undefined,
      next && { outboxId: next.outboxId, targets: configured, eventId },
    );
    return { result: resultFor(row, 'delivered'), nextStarted };
  }
  await recordOutboxError(
    deps.pool,
    row.outboxId,
    outcome.detail,
    outcome.kind === 'permanent' ? 'failed' : 'pending',
  );
  throw failureFor(outcome);
}

/** A row that was not attempted: gone, no longer pending, or its target has no URL on this worker. */
async function notAttempted(deps: DeliveryDependencies, outboxId: number): Promise<OutboxDeliveryResult> {
  const row = await findOutboxRow(deps.pool, outboxId);
  if (!row) throw ApplicationFailure.nonRetryable('no such outbox row', ErrorCode.InvalidWorkflowInput);
  actOnlyFor(paymentWorkflowId(row.eventId), 'deliverOutboxRow');
  if (!isDeliverable(row.status)) return resultFor(row, row.status);
  // Its target is configured: the row left `pending` between the two statements and is back (a race).
  const endpoint = targetEndpoint(deps.config, row.target);
  if (!('missing' in endpoint)) return resultFor(row, row.status);
  const variable = endpoint.missing;
  await markOutboxNotConfigured(deps.pool, row.outboxId, `not sent: ${variable} is not configured`);
  countDelivery(row.target, row.action, 'not_configured');
  logger.warn(
    { event: shortHash(row.eventId), target: row.target, action: row.action, variable },
    'delivery not sent: its target has no URL or no signing secret on this worker; parked as not_configured',
  );
  return resultFor(row, 'not_configured');
}

/** A target this worker can call: it has a URL and a secret to sign with (no call goes unsigned). */
function isConfigured(deps: DeliveryDependencies, target: OutboxTarget): boolean {
  return !('missing' in targetEndpoint(deps.config, target));
}

function resultFor(row: OutboxRow, status: OutboxStatus): OutboxDeliveryResult {
  return { outboxId: row.outboxId, target: row.target, action: row.action, status };
}
