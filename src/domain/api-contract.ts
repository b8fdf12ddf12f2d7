import { z } from 'zod';
import { ErrorCode } from './errors';
import { RECONCILE_OUTCOMES, REMINDER_STATES } from './lifecycles';

/**
 * What the HTTP API answers, as zod schemas: the reply types of the gateway and `settle inspect
 * --json` are inferred from them, and the OpenAPI document (src/gateway/openapi.ts) is generated
 * from them with the request schemas of payment-event.ts and reminder.ts. They are never parsed at
 * run time; they only describe, so a change to a reply is a change here or the compiler refuses it.
 */

/** A time settle writes (`Date#toISOString`). */
const timestamp = () => z.string().meta({ format: 'date-time' });
const nullable = <T extends z.ZodType>(schema: T) => schema.nullable();

export const acceptedSchema = z.object({
  status: z.literal('accepted'),
  event_id: z.string(),
  workflow_id: z.string(),
  run_id: z.string(),
});
export const duplicateSchema = z.object({
  status: z.literal('duplicate'),
  event_id: z.string(),
  workflow_id: z.string(),
});
export const ignoredSchema = z.object({ status: z.literal('ignored'), event_id: z.string() });
/** A provider event naming no shipment: acknowledged and parked (Stripe). */
export const unmatchedSchema = z.object({
  status: z.literal('unmatched'),
  event_id: z.string(),
  message: z.string().describe('Which field named no shipment; listed by `settle exceptions`.'),
});

const fieldIssueSchema = z.object({ path: z.string(), message: z.string() });
export const rejectedSchema = z
  .object({
    status: z.literal('rejected'),
    error: z.enum(Object.values(ErrorCode) as [ErrorCode, ...ErrorCode[]]),
    message: z.string(),
    issues: z.array(fieldIssueSchema).optional(),
  })
  .describe('Every refusal and failure, whatever its status. It never repeats the URL or an ID.');

export const reminderStatusSchema = z.enum(REMINDER_STATES);
export const reminderScheduledSchema = z.object({
  status: z.enum(['scheduled', 'duplicate']),
  delivery_id: z.string(),
  workflow_id: z.string(),
  due_at: timestamp(),
});
export const reminderDuplicateSchema = z.object({
  status: z.literal('duplicate'),
  delivery_id: z.string(),
  workflow_id: z.string(),
  state: reminderStatusSchema.optional().describe("Where the first request's delivery is now."),
  due_at: timestamp().optional(),
});
export const reminderViewSchema = z.object({
  delivery_id: z.string(),
  contract_id: z.string(),
  workflow_id: z.string(),
  status: reminderStatusSchema,
  due_at: timestamp(),
  webhook_url: z.string(),
  lease_expires_at: nullable(timestamp()),
  last_error: nullable(z.string()),
  created_at: timestamp(),
  completed_at: nullable(timestamp()),
  attempt_count: z.int().min(0),
  attempts: z.array(
    z.object({
      attempt: z.int(),
      started_at: timestamp(),
      lease_expires_at: timestamp(),
      finished_at: nullable(timestamp()),
      status_code: nullable(z.int()),
      error: nullable(z.string()),
    }),
  ),
});
export const reminderCancelledSchema = z.object({
  status: z.literal('cancelled'),
  delivery_id: z.string(),
  workflow_id: z.string(),
});

export const healthSchema = z.object({ status: z.literal('ok') });
export const readinessSchema = z.object({
  status: z.enum(['ready', 'not_ready']),
  postgres: z.boolean(),
  temporal: z.boolean().describe("settle's namespace answers DescribeNamespace."),
  temporal_error: z
    .enum(['namespace_not_found', 'unauthenticated', 'permission_denied', 'tls'])
    .optional()
    .describe('Why Temporal refuses settle, when it answers at all.'),
  message: z.string().optional().describe('The cause in words, naming the namespace.'),
});

/** The JSON of `GET /events/<id>` and `settle inspect <id> --json`. */
export const eventInspectionSchema = z.object({
  event_id: z.string(),
  type: nullable(z.string()),
  workflow_id: z.string(),
  payload_sha256: z.string(),
  received_at: nullable(timestamp()),
  outcome: nullable(z.enum(RECONCILE_OUTCOMES)),
  claimed_at: nullable(timestamp()),
  workflow: nullable(
    z.object({
      status: z.string(),
      run_id: z.string(),
      version: z
        .object({
          deployment: z.string(),
          build_id: z.string(),
          behavior: nullable(z.enum(['pinned', 'auto_upgrade'])),
        })
        .optional()
        .describe(
          'The Worker Deployment build the run is on (docs/operations.md, "Worker Deployments"); ' +
            'absent for a run of unversioned workers.',
        ),
    }),
  ),
  workflow_error: z
    .string()
    .optional()
    .describe(
      'Set when Temporal could not be asked (`workflow` is then unknown rather than forgotten): ' +
        'temporal_unavailable, temporal_not_configured, temporal_namespace_not_found, ' +
        'temporal_unauthenticated, temporal_permission_denied, temporal_tls.',
    ),
  start_outcome_unknown_at: timestamp()
    .optional()
    .describe(
      'When a start of this event last ended with its outcome unknown (answered 503, yet Temporal ' +
        'may have started it): why a later delivery was answered `duplicate`.',
    ),
  workflow_error_message: z.string().optional().describe('What workflow_error means here.'),
  shipment: nullable(
    z.object({ shipment_id: z.string(), payment_status: z.string(), hold_status: z.string() }),
  ),
  missing_shipment_id: nullable(z.string()).describe(
    'The shipment the event names when no such shipment exists (why it is unmatched).',
  ),
  ledger: z.array(
    z.object({
      entry_id: z.int(),
      kind: z.string(),
      amount: z.int(),
      currency: z.string(),
      event_id: z.string(),
    }),
  ),
  deliveries: z.array(
    z.object({
      target: z.string(),
      action: z.string(),
      status: z.string(),
      attempts: z.int(),
      idempotency_key: z.string(),
      last_error: nullable(z.string()),
    }),
  ),
});

export type Accepted = z.infer<typeof acceptedSchema>;
export type Duplicate = z.infer<typeof duplicateSchema>;
export type Ignored = z.infer<typeof ignoredSchema>;
export type Unmatched = z.infer<typeof unmatchedSchema>;
export type Rejected = z.infer<typeof rejectedSchema>;
export type ReminderScheduled = z.infer<typeof reminderScheduledSchema>;
export type ReminderDuplicate = z.infer<typeof reminderDuplicateSchema>;
export type ReminderView = z.infer<typeof reminderViewSchema>;
export type ReminderCancelled = z.infer<typeof reminderCancelledSchema>;
export type Readiness = z.infer<typeof readinessSchema>;
export type EventInspection = z.infer<typeof eventInspectionSchema>;
export type Health = z.infer<typeof healthSchema>;
