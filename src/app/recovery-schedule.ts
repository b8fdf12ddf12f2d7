import { ScheduleAlreadyRunning, ScheduleNotFoundError, type Client } from '@temporalio/client';
import type { Config } from '../config';
import { formatDuration } from '../domain/duration';
import type { Logger } from '../lib/logger';
import type { recoverySweepWorkflow } from '../workflows';

/** One recovery Schedule per provider and deployment (task queue). */
export function recoveryScheduleId(provider: 'stripe', taskQueue: string): string {
  return `settle-recovery-sweep:${provider}:${taskQueue}`;
}

export type RecoveryScheduleConfig = Pick<Config, 'taskQueue' | 'stripeApiKey' | 'stripeSweepEveryMs'>;

/**
 * With a Stripe API key, ensures the sweep Schedule (every SETTLE_STRIPE_SWEEP_EVERY, its interval
 * brought up to date when the Schedule exists); without one, removes a Schedule left from when a key
 * was set, so no run fails for want of it. Several processes starting at once all succeed. A run
 * still going when the next is due makes the next one skip; a run missed while Temporal was away is
 * not caught up (the next one lists from the same cursor).
 */
export async function ensureRecoverySchedule(
  client: Client,
  config: RecoveryScheduleConfig,
): Promise<{ scheduleId: string; state: 'created' | 'updated' | 'unchanged' | 'off' }> {
  const scheduleId = recoveryScheduleId('stripe', config.taskQueue);
  const handle = client.schedule.getHandle(scheduleId);
  if (!config.stripeApiKey) {
    await handle.delete().catch((error: unknown) => {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    });
    return { scheduleId, state: 'off' };
  }
  const spec = { intervals: [{ every: config.stripeSweepEveryMs }] };
  try {
    await client.schedule.create<typeof recoverySweepWorkflow>({
      scheduleId,
      spec,
      action: {
        type: 'startWorkflow',
        workflowType: 'recoverySweepWorkflow',
        workflowId: scheduleId,
        taskQueue: config.taskQueue,
        args: [{ provider: 'stripe' }],
      },
      policies: { overlap: 'SKIP', catchupWindow: '1 minute' },
    });
    return { scheduleId, state: 'created' };
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  // Every worker start comes here: only a changed interval is written.
  const current = (await handle.describe()).spec.intervals?.[0]?.every;
  if (current === config.stripeSweepEveryMs) return { scheduleId, state: 'unchanged' };
  await handle.update((previous) => ({ ...previous, spec }));
  return { scheduleId, state: 'updated' };
}

/** At start, beside the purge Schedule: never fatal, the next start tries again. */
export async function prepareRecovery(
  client: Client,
  config: RecoveryScheduleConfig,
  logger: Logger,
): Promise<void> {
  try {
    const schedule = await ensureRecoverySchedule(client, config);
    if (schedule.state === 'off') {
      logger.info(
        { component: 'recovery', scheduleId: schedule.scheduleId },
        'Stripe recovery sweep off: no SETTLE_STRIPE_API_KEY (or _FILE) is set',
      );
    } else {
      logger.info(
        { component: 'recovery', ...schedule, every: formatDuration(config.stripeSweepEveryMs) },
        'Stripe recovery sweep schedule ready',
      );
    }
  } catch (error) {
    logger.warn(
      { component: 'recovery', err: error instanceof Error ? error.message : String(error) },
      'could not prepare the recovery sweep schedule; the next start tries again',
    );
  }
}
