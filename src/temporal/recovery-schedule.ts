import { ScheduleAlreadyRunning, ScheduleNotFoundError, type Client } from '@temporalio/client';
import type { Config } from '../config';
import { formatDuration } from '../domain/duration';
import type { Logger } from '../lib/logger';
import type { recoverySweepWorkflow } from '../workflows';
import type { RecoveryProvider } from '../domain/workflow-contracts';

/** One recovery Schedule per provider and deployment (task queue). */
export function recoveryScheduleId(provider: RecoveryProvider, taskQueue: string): string {
  return `settle-recovery-sweep:${provider}:${taskQueue}`;
}

export type RecoveryScheduleConfig = Pick<Config, 'taskQueue' | 'stripeApiKey' | 'stripeSweepEveryMs'> &
  Partial<Pick<Config, 'paypalClientId' | 'paypalClientSecret' | 'paypalSweepEveryMs'>>;

/** Each provider's sweep: on while its credentials are set, every its own interval. */
const SWEEPS: Record<
  RecoveryProvider,
  {
    on: (config: RecoveryScheduleConfig) => boolean;
    every: (config: RecoveryScheduleConfig) => number;
    credentials: string;
    name: string;
  }
> = {
  stripe: {
    on: (config) => !!config.stripeApiKey,
    every: (config) => config.stripeSweepEveryMs,
    credentials: 'SETTLE_STRIPE_API_KEY (or _FILE)',
    name: 'Stripe',
  },
  paypal: {
    on: (config) => !!config.paypalClientId && !!config.paypalClientSecret,
    every: (config) => config.paypalSweepEveryMs ?? 15 * 60_000,
    credentials: 'SETTLE_PAYPAL_CLIENT_ID and SETTLE_PAYPAL_CLIENT_SECRET (or _FILE)',
    name: 'PayPal',
  },
};

/**
 * With the provider's API credentials (Stripe's key; PayPal's client ID and secret), ensures its
 * sweep Schedule (every SETTLE_<PROVIDER>_SWEEP_EVERY, its interval brought up to date when the
 * Schedule exists); without them, removes a Schedule left from when they were set, so no run fails
 * for want of them. Several processes starting at once all succeed. A run still going when the
 * next is due makes the next one skip; a run missed while Temporal was away is not caught up (the
 * next one lists from the same cursor).
 */
export async function ensureRecoverySchedule(
  client: Client,
  config: RecoveryScheduleConfig,
  provider: RecoveryProvider = 'stripe',
): Promise<{ scheduleId: string; state: 'created' | 'updated' | 'unchanged' | 'off' }> {
  const sweep = SWEEPS[provider];
  const scheduleId = recoveryScheduleId(provider, config.taskQueue);
  const handle = client.schedule.getHandle(scheduleId);
  if (!sweep.on(config)) {
    await handle.delete().catch((error: unknown) => {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    });
    return { scheduleId, state: 'off' };
  }
  const every = sweep.every(config);
  const spec = { intervals: [{ every }] };
  try {
    await client.schedule.create<typeof recoverySweepWorkflow>({
      scheduleId,
      spec,
      action: {
        type: 'startWorkflow',
        workflowType: 'recoverySweepWorkflow',
        workflowId: scheduleId,
        taskQueue: config.taskQueue,
        args: [{ provider }],
      },
      policies: { overlap: 'SKIP', catchupWindow: '1 minute' },
    });
    return { scheduleId, state: 'created' };
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  // Every worker start comes here: only a changed interval is written.
  const current = (await handle.describe()).spec.intervals?.[0]?.every;
  if (current === every) return { scheduleId, state: 'unchanged' };
  await handle.update((previous) => ({ ...previous, spec }));
  return { scheduleId, state: 'updated' };
}

/** At start, beside the purge Schedule: never fatal, the next start tries again. */
export async function prepareRecovery(
  client: Client,
  config: RecoveryScheduleConfig,
  logger: Logger,
): Promise<void> {
  for (const provider of Object.keys(SWEEPS) as RecoveryProvider[]) {
    const sweep = SWEEPS[provider];
    try {
      const schedule = await ensureRecoverySchedule(client, config, provider);
      if (schedule.state === 'off') {
        logger.info(
          { component: 'recovery', scheduleId: schedule.scheduleId },
          `${sweep.name} recovery sweep off: no ${sweep.credentials} is set`,
        );
      } else {
        logger.info(
          { component: 'recovery', ...schedule, every: formatDuration(sweep.every(config)) },
          `${sweep.name} recovery sweep schedule ready`,
        );
      }
    } catch (error) {
      logger.warn(
        { component: 'recovery', provider, err: error instanceof Error ? error.message : String(error) },
        'could not prepare the recovery sweep schedule; the next start tries again',
      );
    }
  }
}
