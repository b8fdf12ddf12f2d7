import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { connectClient } from '../temporal/client';
import { ConfigError, loadConfig, type Config } from '../config';
import { createPool } from '../db/pool';
import { resolveEnvironment, resolveStackEnvironment } from '../stack/dev-state';

export type Services = { config: Config; pool: pg.Pool; client: Client; env: NodeJS.ProcessEnv };

/** A failure meant for the person at the terminal: printed without a stack trace. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Loads the configuration for a command, naming every bad variable and how to get a running stack. */
export function commandConfig(): { config: Config; env: NodeJS.ProcessEnv } {
  const { env, devStack } = resolveStackEnvironment();
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
export async function withServices<T>(fn: (services: Services) => Promise<T>): Promise<T> {
  const { config, env } = commandConfig();
  const pool = createPool(config.databaseUrl, { max: 5 });
  const client = await connectClient(config);
  try {
    return await fn({ config, pool, client, env });
  } finally {
    await client.connection.close().catch(() => {});
    await pool.end();
  }
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
