import { checkNamespace, type TemporalProblem } from '../temporal/connection';
import type { Services } from './services';

/** How long one DescribeNamespace answer stands, so readiness probes do not each cost a call. */
const READINESS_CACHE_MS = 2_000;

export type Readiness = { postgres: boolean; temporal: boolean; problem: TemporalProblem | undefined };

/**
 * /readyz's check: PostgreSQL answers a query, and the Temporal namespace exists and answers
 * (DescribeNamespace, its answer cached briefly).
 */
export function readinessCheck(deps: Pick<Services, 'pool' | 'client'>): () => Promise<Readiness> {
  let cached: { at: number; result: Promise<TemporalProblem | undefined> } | undefined;
  const namespaceProblem = () => {
    if (!cached || Date.now() - cached.at > READINESS_CACHE_MS) {
      cached = { at: Date.now(), result: checkNamespace(deps.client, 4_000) };
    }
    return cached.result;
  };
  return async () => {
    const [postgres, problem] = await Promise.all([
      deps.pool.query('SELECT 1').then(
        () => true,
        () => false,
      ),
      namespaceProblem(),
    ]);
    return { postgres, temporal: problem === undefined, problem };
  };
}
