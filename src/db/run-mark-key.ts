import { randomBytes } from 'node:crypto';
import type { Queryable } from './pool';

/**
 * The deployment's run-mark key (migration 016): made by the first caller, read by every other. Two
 * first callers at once both insert; one wins and both read its key.
 */
export async function loadRunMarkKey(db: Queryable): Promise<Buffer> {
  await db.query(`INSERT INTO run_mark_key (key) VALUES ($1::bytea) ON CONFLICT (singleton) DO NOTHING`, [
    randomBytes(32),
  ]);
  const { rows } = await db.query<{ key: Buffer }>(`SELECT key FROM run_mark_key`);
  const key = rows[0]?.key;
  if (!key) throw new Error('run_mark_key has no key after its insert');
  return key;
}
