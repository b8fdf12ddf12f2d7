import { ApplicationFailure, Context } from '@temporalio/activity';
import { recoverMissedEvents, summaryOfFault } from '../app/recovery-missed-events';
import type { Services } from '../app/services';
import { logger } from '../lib/logger';
import { recoverySweepFailuresTotal } from '../metrics/settle-metrics';
import type { ProviderModule } from '../providers/module';
import { isProviderName, PROVIDERS } from '../providers/registry';
import { RecoveryFault, type RecoverySource } from '../providers/recovery-source';
import { untilDrained } from '../lib/shutdown';
import type { ProviderMode } from '../providers/types';
import type {
  RecoveryActivities,
  RecoveryProvider,
  RecoverySweepInput,
  RecoverySweepResult,
} from '../domain/workflow-contracts';

/** Well inside the workflow's heartbeat timeout (src/workflows/recovery-sweep.ts), and above one request's. */
const HEARTBEAT_EVERY_MS = 10_000;

/**
 * ApplicationFailure types of a sweep that ended on a fault; the workflow's retry policy does not
 * retry the first two (src/workflows/recovery-sweep.ts).
 */
export const RecoveryFailureType = {
  /** The provider refused the API key (revoked, expired, lacking read access): an operator must act. */
  authRefused: 'provider_auth_refused',
  /** The provider refused the request itself: retrying the same request cannot help. */
  refused: 'provider_refused',
  rateLimited: 'provider_rate_limited',
  unavailable: 'provider_unavailable',
} as const;

/**
 * The recovery sweep, run by the recovery Schedule: lists the provider's events from the durable
 * cursor and admits each through the webhook's door (src/app/recovery-missed-events.ts). The worker's own
 * configuration holds the key, so nothing secret is in the Schedule or in history. Safe to retry:
 * each attempt resumes from the cursor, and what an earlier attempt admitted is a duplicate.
 */
export function createRecoveryActivities(
  deps: Services & {
    sources: Partial<Record<RecoveryProvider, RecoverySource>>;
    /** SETTLE_PROVIDER_MODE: a listed event of the other mode is ignored, as at the webhook. */
    providerMode?: ProviderMode;
  },
): RecoveryActivities {
  return {
    async sweepProviderEvents(input: RecoverySweepInput): Promise<RecoverySweepResult> {
      const source = deps.sources[input.provider];
      if (!source) {
        throw ApplicationFailure.nonRetryable(
          `this worker has no ${input.provider} API credentials (${recoveryCredentials(input.provider)}): it cannot sweep`,
          RecoveryFailureType.authRefused,
        );
      }
      const context = Context.current();
      let progress = { listed: 0, admitted: 0 };
      const beat = setInterval(() => context.heartbeat(progress), HEARTBEAT_EVERY_MS);
      try {
        const summary = await recoverMissedEvents(deps, source, {
          signal: untilDrained(context.cancellationSignal),
          providerMode: deps.providerMode,
          onProgress: (done) => {
            progress = { listed: done.listed, admitted: done.admitted };
            context.heartbeat(progress);
          },
        });
        if (summary.interrupted) {
          // Cancelled, timed out or the worker stopping: what was admitted stays, the retry resumes.
          throw new Error('the sweep was interrupted; the next attempt resumes from the cursor');
        }
        logger.info(
          {
            component: 'recovery',
            provider: input.provider,
            listed: summary.listed,
            alreadyHad: summary.already_had,
            admitted: summary.admitted,
            refused: summary.refused,
            eventsPerSecond: summary.events_per_second,
          },
          summary.admitted > 0
            ? 'recovery sweep admitted events the provider never delivered'
            : 'recovery sweep done',
        );
        return {
          provider: input.provider,
          listed: summary.listed,
          alreadyHad: summary.already_had,
          admitted: summary.admitted,
          ignored: summary.ignored,
          refused: summary.refused,
          cursorCreatedAt: summary.cursor?.created_at ?? null,
        };
      } catch (error) {
        throw sweepFailure(input.provider, error);
      } finally {
        clearInterval(beat);
      }
    },
  };
}

/** A fault as the failure the retry policy reads: Retry-After becomes the next retry's delay. */
function sweepFailure(provider: string, error: unknown): unknown {
  if (!(error instanceof RecoveryFault)) return error;
  recoverySweepFailuresTotal.inc({ provider, reason: error.kind });
  const admitted = summaryOfFault(error)?.admitted ?? 0;
  const meta = { component: 'recovery', provider, reason: error.kind, admittedBeforeFault: admitted };
  switch (error.kind) {
    case 'unauthorized':
      logger.error(meta, `recovery sweep refused by ${provider}: ${error.message}`);
      return ApplicationFailure.nonRetryable(error.message, RecoveryFailureType.authRefused);
    case 'refused':
      logger.error(meta, `recovery sweep: ${provider} refused the request: ${error.message}`);
      return ApplicationFailure.nonRetryable(error.message, RecoveryFailureType.refused);
    case 'rate_limited':
    case 'unavailable':
    case 'cursor_gone':
      logger.warn(
        { ...meta, retryAfterMs: error.retryAfterMs },
        `recovery sweep stopped, retrying: ${error.message}`,
      );
      return ApplicationFailure.create({
        message: error.message,
        type:
          error.kind === 'rate_limited' ? RecoveryFailureType.rateLimited : RecoveryFailureType.unavailable,
        nextRetryDelay: error.retryAfterMs,
      });
  }
}

/** The variables a provider's sweep needs, as its module names them. */
function recoveryCredentials(provider: string): string {
  const module: ProviderModule | undefined = isProviderName(provider) ? PROVIDERS[provider] : undefined;
  return module?.recovery?.credentials ?? 'none: it has no events API';
}
