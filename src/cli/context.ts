import type pg from 'pg';
import { ConfigError, loadConfig, type Config } from '../config';
import { createPool } from '../db/pool';
import { resolveEnvironment, resolveStackEnvironment, withDevSecrets } from '../config/dev-state';
import type { Services } from '../app/services';
import { CliError } from './errors';

export { CliError };

/** What a command runs on: the use cases' Services (app/services.ts) with its configuration and environment. */
export type CommandServices = Pick<Services, 'pool' | 'client'> & { config: Config; env: NodeJS.ProcessEnv };

/**
 * The configuration of `settle worker` and `settle gateway`, production processes: their own
 * environment only. Nothing is taken from `.settle/` (no running stack, no development secrets), so a
 * missing variable stops them naming it.
 */
export function roleConfig(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message);
    throw error;
  }
}

/**
 * Loads the configuration for a command, naming every bad variable and how to get a running stack.
 * `devSecrets` fills unset secrets from `.settle/dev-secrets.json`: only for the commands that send to
 * the local stack's gateway as a provider would (`example`, `simulate`).
 */
export function commandConfig(
  options: { devSecrets?: boolean; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): { config: Config; env: NodeJS.ProcessEnv } {
  const resolved = resolveStackEnvironment(options.env, options.cwd);
  const env = options.devSecrets ? withDevSecrets(resolved.env, options.cwd) : resolved.env;
  const devStack = resolved.devStack;
  if (!env.DATABASE_URL) {
    throw new CliError(
      'No running settle found: start one in this folder with `npm start`, or set DATABASE_URL and ' +
        'TEMPORAL_ADDRESS (or a Temporal profile: TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE).',
    );
  }
  try {
    return { config: loadConfig(env, { temporal: devStack ? 'dev-stack' : 'environment' }), env };
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message);
    throw error;
  }
}

/** Runs `fn` with a pool and a Temporal client, and closes both afterwards. */
export async function withServices<T>(
  fn: (services: CommandServices) => Promise<T>,
  options: { devSecrets?: boolean } = {},
): Promise<T> {
  const { config, env } = commandConfig(options);
  const pool = createPool(config.databaseUrl, { max: 5 });
  // Loaded here, not at the top: `settle inspect` uses this module's config without the client.
  const { connectClient } = await import('../client.js');
  const client = await connectClient(config);
  try {
    return await fn({ config, pool, client, env });
  } finally {
    await client.connection.close().catch(() => {});
    await pool.end();
  }
}

/** withServices with the development secrets filled in (see commandConfig): `settle example`. */
export function withDevServices<T>(fn: (services: CommandServices) => Promise<T>): Promise<T> {
  return withServices(fn, { devSecrets: true });
}

/** Prints `value` as JSON with --json, otherwise as the human text `render` makes of it. */
export function output<T>(json: boolean | undefined, value: T, render: (value: T) => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${render(value)}\n`);
}

/** Runs `fn` with a small pool on DATABASE_URL (or the running stack's), for commands that need no Temporal. */
export async function withDatabase<T>(fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const databaseUrl = resolveEnvironment().DATABASE_URL;
  if (!databaseUrl)
    throw new CliError('DATABASE_URL is not set and no `npm start` stack is running in this folder.');
  const pool = createPool(databaseUrl, { max: 2 });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}
