import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { OUTBOX_STATUSES, OUTBOX_TARGETS } from '../../src/domain/outbox';
import { paymentEventSchema } from '../../src/domain/payment-event';
import { PAYMENT_STATUSES } from '../../src/domain/payment-rules';
import type * as contracts from '../../src/domain/workflow-contracts';

/**
 * What is written to workflow history (src/domain/workflow-contracts.ts), restated as strict zod schemas.
 * The type checks below tie each schema to its contract type (`npm run typecheck` fails when they
 * drift); the snapshot catches a change of shape (test/fixtures/workflow-contracts.json: rewrite it
 * with SETTLE_UPDATE_CONTRACTS=1 only for a change made on purpose, behind patched() if need be);
 * and every payload of the recorded histories must parse, so the contract is what runs really wrote.
 */
const outboxEntry = z.strictObject({
  outboxId: z.number(),
  target: z.enum(OUTBOX_TARGETS as [contracts.OutboxEntry['target'], ...contracts.OutboxEntry['target'][]]),
  action: z.string(),
  idempotencyKey: z.string(),
  status: z.enum(OUTBOX_STATUSES),
});
const reconcileOutcome = z.enum(['applied', 'stale', 'unmatched', 'needs_review']);
const paymentStatus = z.enum(PAYMENT_STATUSES).nullable();
const reconcileResult = z.strictObject({
  outcome: reconcileOutcome,
  claimExisted: z.boolean(),
  shipmentId: z.string(),
  paymentStatus,
  outbox: z.array(outboxEntry),
});
const outboxInput = z.strictObject({ outboxId: z.number() });
const outboxDeliveryResult = z.strictObject({
  outboxId: z.number(),
  target: outboxEntry.shape.target,
  action: z.string(),
  status: z.enum(OUTBOX_STATUSES),
});
const stepFailure = z.strictObject({
  type: z.string().nullable(),
  message: z.string(),
  nonRetryable: z.boolean(),
  retryAfterMs: z.number().nullable(),
});
const deliveryAttempt = z.union([
  z.strictObject({ outboxId: z.number(), delivered: outboxDeliveryResult }),
  z.strictObject({ outboxId: z.number(), failure: stepFailure }),
]);
const reconcileAndDeliverResult = z.strictObject({
  reconciled: reconcileResult,
  attempts: z.array(deliveryAttempt),
});
const reholdResult = z.strictObject({
  status: z.enum(['reheld', 'already_compensated', 'never_sent', 'refused', 'not_configured']),
});
const compensationInput = z.strictObject({ eventId: z.string(), reason: z.string() });
const paymentCompensationResult = z.strictObject({
  reversals: z.number(),
  abandoned: z.number(),
  outbox: z.array(outboxEntry).optional(),
});
const paymentWorkflowInput = z.strictObject({ event: paymentEventSchema });
const paymentWorkflowResult = z.strictObject({
  ...reconcileResult.shape,
  deliveries: z.array(outboxDeliveryResult),
  compensated: z.boolean(),
});
const reminderState = z.enum(['scheduled', 'processing', 'succeeded', 'failed', 'cancelled']);
const reminderWorkflowInput = z.strictObject({ deliveryId: z.string(), dueAt: z.string() });
const reminderDeliveryInput = z.strictObject({ deliveryId: z.string() });
const reminderDeliveryResult = z.strictObject({ state: reminderState, attempts: z.number() });
const failReminderInput = z.strictObject({ deliveryId: z.string(), reason: z.string() });
const failReminderResult = z.strictObject({ attempts: z.number() });
const reminderCancelConfirmation = z.strictObject({ cancelled: z.boolean() });
const invalidRunInput = z.strictObject({ sample: z.string(), length: z.number() });
const invalidRunResult = z.strictObject({ recorded: z.boolean() });
const purgeResult = z.strictObject({
  cutoff: z.string(),
  claims: z.number(),
  events: z.number(),
  conflicts: z.number(),
  providerExceptions: z.number().optional(),
  keptExceptions: z.number(),
  dryRun: z.boolean(),
});
// A provider's name in the providers' table (src/providers/registry.ts); workflow code reads no table.
const recoverySweepInput = z.strictObject({ provider: z.string() });
const recoverySweepResult = z.strictObject({
  provider: z.string(),
  listed: z.number(),
  alreadyHad: z.number(),
  admitted: z.number(),
  ignored: z.number(),
  refused: z.number(),
  cursorCreatedAt: z.string().nullable(),
});

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const same = <A, B>(proof: Same<A, B>) => proof;
// Each line fails `npm run typecheck` when a contract type and its schema here disagree.
same<z.infer<typeof outboxEntry>, contracts.OutboxEntry>(true);
same<z.infer<typeof reconcileResult>, contracts.ReconcileResult>(true);
same<z.infer<typeof outboxInput>, contracts.OutboxInput>(true);
same<z.infer<typeof outboxDeliveryResult>, contracts.OutboxDeliveryResult>(true);
same<z.infer<typeof stepFailure>, contracts.StepFailure>(true);
same<z.infer<typeof deliveryAttempt>, contracts.DeliveryAttempt>(true);
same<z.infer<typeof reconcileAndDeliverResult>, contracts.ReconcileAndDeliverResult>(true);
same<z.infer<typeof reholdResult>, contracts.UndoDeliveryResult>(true);
same<z.infer<typeof compensationInput>, contracts.CompensationInput>(true);
same<z.infer<typeof paymentCompensationResult>, contracts.PaymentCompensationResult>(true);
same<z.infer<typeof paymentWorkflowInput>, contracts.PaymentWorkflowInput>(true);
same<z.infer<typeof paymentWorkflowResult>, contracts.PaymentWorkflowResult>(true);
same<z.infer<typeof reminderWorkflowInput>, contracts.ReminderWorkflowInput>(true);
same<z.infer<typeof reminderDeliveryInput>, contracts.ReminderDeliveryInput>(true);
same<z.infer<typeof reminderDeliveryResult>, contracts.ReminderDeliveryResult>(true);
same<z.infer<typeof failReminderInput>, contracts.FailReminderInput>(true);
same<z.infer<typeof failReminderResult>, contracts.FailReminderResult>(true);
same<z.infer<typeof reminderCancelConfirmation>, contracts.ReminderCancelConfirmation>(true);
same<z.infer<typeof invalidRunInput>, contracts.InvalidRunInput>(true);
same<z.infer<typeof invalidRunResult>, contracts.InvalidRunResult>(true);
same<z.infer<typeof purgeResult>, contracts.PurgeResult>(true);
same<z.infer<typeof recoverySweepInput>, contracts.RecoverySweepInput>(true);
same<z.infer<typeof recoverySweepResult>, contracts.RecoverySweepResult>(true);

/** Per workflow and activity type: the schema of its input (the first argument) and of its result. */
const HISTORY_SHAPES: Record<string, { input?: z.ZodType; result: z.ZodType }> = {
  paymentWorkflow: { input: paymentWorkflowInput, result: paymentWorkflowResult },
  reminderWorkflow: { input: reminderWorkflowInput, result: reminderDeliveryResult },
  purgeClaimsWorkflow: { result: purgeResult },
  recoverySweepWorkflow: { input: recoverySweepInput, result: recoverySweepResult },
  reconcilePayment: { input: paymentEventSchema, result: reconcileResult },
  deliverOutboxRow: { input: outboxInput, result: outboxDeliveryResult },
  reconcileAndDeliver: { input: paymentEventSchema, result: reconcileAndDeliverResult },
  reholdShipment: { input: outboxInput, result: reholdResult },
  compensatePaymentEffects: { input: compensationInput, result: paymentCompensationResult },
  deliverReminder: { input: reminderDeliveryInput, result: reminderDeliveryResult },
  failReminder: { input: failReminderInput, result: failReminderResult },
  confirmReminderCancelled: { input: reminderDeliveryInput, result: reminderCancelConfirmation },
  recordInvalidRun: { input: invalidRunInput, result: invalidRunResult },
  purgeClaimsPastRetention: { result: purgeResult },
  sweepProviderEvents: { input: recoverySweepInput, result: recoverySweepResult },
};

const SNAPSHOT = join(__dirname, '..', 'fixtures', 'workflow-contracts.json');

describe('the shapes written to workflow history (src/domain/workflow-contracts.ts)', () => {
  test('are unchanged: their JSON Schema matches the checked-in snapshot', () => {
    const current = Object.fromEntries(
      Object.entries(HISTORY_SHAPES).map(([name, shape]) => [
        name,
        {
          ...(shape.input ? { input: z.toJSONSchema(shape.input, { io: 'input' }) } : {}),
          result: z.toJSONSchema(shape.result, { io: 'input' }),
        },
      ]),
    );
    // Compared as JSON, not as text: the fixture is kept in prettier's layout (`npm run format`).
    if (process.env.SETTLE_UPDATE_CONTRACTS === '1')
      writeFileSync(SNAPSHOT, `${JSON.stringify(current, null, 2)}\n`);
    assert.deepEqual(
      current,
      JSON.parse(readFileSync(SNAPSHOT, 'utf8')),
      'a shape written to workflow history changed; if on purpose, rerun with SETTLE_UPDATE_CONTRACTS=1',
    );
  });

  test('describe every payload of the recorded histories', () => {
    const dir = join(__dirname, '..', 'histories');
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) =>
      name.endsWith('.json'),
    );
    let checked = 0;
    const check = (name: string, part: 'input' | 'result', payload: Payload | undefined, file: string) => {
      const schema = HISTORY_SHAPES[name]?.[part];
      assert.ok(HISTORY_SHAPES[name], `${file}: no contract for ${name}`);
      if (!schema || !payload) return;
      const value = decode(payload);
      if (value === undefined) return; // encrypted: test/replay-histories.test.ts reads those
      const parsed = schema.safeParse(value);
      assert.ok(parsed.success, `${file}: ${name} ${part}: ${parsed.error?.message}`);
      checked += 1;
    };
    for (const file of files) {
      const { events } = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { events: HistoryEvent[] };
      const scheduled = new Map<string, string>();
      const workflowType = events[0]!.workflowExecutionStartedEventAttributes!.workflowType.name;
      // A run started around settle (`*-invalid-input`) has whatever input its starter gave it.
      if (!file.endsWith('-invalid-input.json')) {
        check(
          workflowType,
          'input',
          events[0]!.workflowExecutionStartedEventAttributes!.input?.payloads?.[0],
          file,
        );
      }
      for (const event of events) {
        const started = event.activityTaskScheduledEventAttributes;
        if (started) {
          scheduled.set(event.eventId, started.activityType.name);
          check(started.activityType.name, 'input', started.input?.payloads?.[0], file);
        }
        const completed = event.activityTaskCompletedEventAttributes;
        if (completed) {
          check(scheduled.get(completed.scheduledEventId)!, 'result', completed.result?.payloads?.[0], file);
        }
        const marker = event.markerRecordedEventAttributes;
        if (marker?.markerName === 'core_local_activity') {
          const data = decode(marker.details.data!.payloads![0]!) as { activity_type: string } | undefined;
          if (data) check(data.activity_type, 'result', marker.details.result?.payloads?.[0], file);
        }
        const done = event.workflowExecutionCompletedEventAttributes;
        if (done) check(workflowType, 'result', done.result?.payloads?.[0], file);
      }
    }
    assert.ok(checked > 50, `only ${checked} payloads were checked`);
  });
});

type Payload = { metadata: { encoding: string }; data?: string };
/** proto3 JSON leaves an empty list out: `"input": {}` for a workflow or activity without arguments. */
type Payloads = { payloads?: Payload[] };
type HistoryEvent = {
  eventId: string;
  workflowExecutionStartedEventAttributes?: { workflowType: { name: string }; input?: Payloads };
  activityTaskScheduledEventAttributes?: { activityType: { name: string }; input?: Payloads };
  activityTaskCompletedEventAttributes?: { scheduledEventId: string; result?: Payloads };
  markerRecordedEventAttributes?: { markerName: string; details: Record<string, Payloads | undefined> };
  workflowExecutionCompletedEventAttributes?: { result?: Payloads };
};

/** A plain JSON payload's value; undefined for an encrypted one. */
function decode(payload: Payload): unknown {
  const encoding = Buffer.from(payload.metadata.encoding, 'base64').toString();
  if (encoding !== 'json/plain') return undefined;
  return JSON.parse(Buffer.from(payload.data ?? '', 'base64').toString('utf8'));
}
