import type { Client } from '@temporalio/client';
import type pg from 'pg';

/**
 * What the use cases run on: settle's PostgreSQL pool, its Temporal client and the task queue runs
 * start on. Every use case takes it (or the part it needs) as `deps`.
 */
export type Services = { pool: pg.Pool; client: Client; taskQueue: string };
