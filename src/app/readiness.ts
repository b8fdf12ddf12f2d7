import { checkNamespace, type TemporalProblem } from '../temporal/connection';
import type { Services } from './services';

/**
 * How long one answer stands, so that probes (and a flood of them) cost one `SELECT 1` and one
 * DescribeNamespace per interval between them.
 */
const READINESS_CACHE_MS = 1_000;

export type Readiness = { postgres: boolean; temporal: boolean; problem: TemporalProblem | undefined };

/**
 * /readyz's check: PostgreSQL answers a query, and the Temporal namespace exists and answers
 * (DescribeNamespace). The answer is cached briefly; callers meanwhile, or while it is being made,
 * share it.
 */
export function readinessCheck(deps: Pick<Services, 'pool' | 'client'>): () => Promise<Readiness> {
  let cached: { at: number; result: Promise<Readiness> } | undefined;
  const check = async (): Promise<Readiness> => {
    const [postgres, problem] = await Promise.all([
      deps.pool.query('SELECT 1').then(
        () => true,
        () => false,
      ),
      checkNamespace(deps.client, { timeoutMs: 4_000 }),
    ]);
    return { postgres, temporal: problem === undefined, problem };
  };
  return () => {
    if (!cached || Date.now() - cached.at > READINESS_CACHE_MS) {
      const result = check();
      cached = { at: Infinity, result };
      const answered = () => {
        if (cached?.result === result) cached.at = Date.now();
      };
      result.then(answered, answered);
    }
    return cached.result;
  };
}
