import type { Command } from 'commander';
import { migrate } from '../../db/migrate';
import { output, withDatabase } from '../context';

export function registerMigrate(program: Command) {
  program
    .command('migrate')
    .description(
      'Apply database migrations to DATABASE_URL (idempotent; safe from several processes at once).',
    )
    .option('--json', 'print the result as JSON')
    .action(async (options: { json?: boolean }) => {
      const result = await withDatabase(migrate);
      output(options.json, { applied: result.applied, already_applied: result.alreadyApplied }, (r) =>
        r.applied.length
          ? `applied: ${r.applied.join(', ')}`
          : `up to date (${r.already_applied.length} migrations)`,
      );
    });
}
