import { ScheduleAlreadyRunning, ScheduleNotFoundError, type Client } from '@temporalio/client';
import { withProviderDefaults, type Config } from '../config';
import type { ProviderModule } from '../providers/module';
import {
  isProviderName,
  PROVIDERS,
  RECOVERY_PROVIDER_NAMES,
  type PROVIDER_VARIABLES,
} from '../providers/registry';
import { formatDuration } from '../domain/duration';
import type { Logger } from '../lib/logger';
import type { recoverySweepWorkflow } from '../workflows';
import type { RecoveryProvider } from '../domain/workflow-contracts';

/** One recovery Schedule per provider and deployment (task queue). */
export function recoveryScheduleId(provider: RecoveryProvider, taskQueue: string): string {
  return `settle-recovery-sweep:${provider}:${taskQueue}`;
}

/** The configuration the Schedules read: the task queue and every provider's variables. */
export type RecoveryScheduleConfig = Pick<Config, 'taskQueue'> &
  Partial<Pick<Config, keyof typeof PROVIDER_VARIABLES>>;

/** A provider's sweep (its module's `recovery`): on while its credentials are set, every its own interval. */
function sweepOf(provider: RecoveryProvider) {
  const module: ProviderModule | undefined = isProviderName(provider) ? PROVIDERS[provider] : undefined;
  if (!module?.recovery) throw new Error(`${provider} has no events API to sweep`);
  return { name: module.label, ...module.recovery };
}

/**
 * With the provider's API credentials (its module's `recovery.on`), ensures its
 * sweep Schedule (every SETTLE_<PROVIDER>_SWEEP_EVERY, its interval brought up to date when the
 * Schedule exists); without them, removes a Schedule left from when they were set, so no run fails
 * for want of them. Several processes starting at once all succeed. A run still going when the
 * next is due makes the next one skip; a run missed while Temporal was away is not caught up (the
 * next one lists from the same cursor).
 */
export async function ensureRecoverySchedule(
  client: Client,
  config: RecoveryScheduleConfig,
  provider: RecoveryProvider,
): Promise<{ scheduleId: string; state: 'created' | 'updated' | 'unchanged' | 'off' }> {
  const sweep = sweepOf(provider);
  const providerConfig = withProviderDefaults(config);
  const scheduleId = recoveryScheduleId(provider, config.taskQueue);
  const handle = client.schedule.getHandle(scheduleId);
  if (!sweep.on(providerConfig)) {
    await handle.delete().catch((error: unknown) => {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    });
    return { scheduleId, state: 'off' };
  }
  const every = sweep.everyMs(providerConfig);
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
  for (const provider of RECOVERY_PROVIDER_NAMES) {
    const sweep = sweepOf(provider);
    try {
      const schedule = await ensureRecoverySchedule(client, config, provider);
      if (schedule.state === 'off') {
        logger.info(
          { component: 'recovery', scheduleId: schedule.scheduleId },
          `${sweep.name} recovery sweep off: no ${sweep.credentials} is set`,
        );
      } else {
        logger.info(
          {
            component: 'recovery',
            ...schedule,
            every: formatDuration(sweep.everyMs(withProviderDefaults(config))),
          },
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
