import { Command } from 'commander';
import { registerExample } from './commands/example';
import { registerExceptions } from './commands/exceptions';
import { registerImport } from './commands/import';
import { registerInspect } from './commands/inspect';
import { registerMigrate } from './commands/migrate';
import { registerPurge } from './commands/purge';
import { registerReplay } from './commands/replay';
import { registerRoles } from './commands/roles';
import { registerShipments } from './commands/shipments';
import { registerSimulate } from './commands/simulate';
import { registerStats } from './commands/stats';
import { installShutdown, stopping } from '../lib/shutdown';
import { ConfigError } from '../config';
import { TemporalSetupError } from '../temporal/connection';
import { CliError } from './context';

// Before anything else: SIGINT and SIGTERM stop every role and command within the deadline.
installShutdown();

const program = new Command('settle')
  .description(
    'Payment webhooks and renewal reminders turned into business effects that commit exactly once.\n' +
      'Commands find a running `npm start` stack in this folder, or use DATABASE_URL and TEMPORAL_ADDRESS.',
  )
  .showHelpAfterError();

registerRoles(program);
registerMigrate(program);
registerShipments(program);
registerInspect(program);
registerReplay(program);
registerImport(program);
registerExceptions(program);
registerStats(program);
registerPurge(program);
registerSimulate(program);
registerExample(program);

void program
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    if (error instanceof CliError || error instanceof TemporalSetupError || error instanceof ConfigError) {
      process.stderr.write(`settle: ${error.message}\n`);
      process.exitCode = error instanceof CliError ? error.exitCode : 1;
    } else {
      process.stderr.write(
        `settle: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 1;
    }
    // A failed command, or one stopped by a signal, ends the process now: whatever it opened (a
    // Temporal runtime, a half-closed connection) must not keep a failed worker alive.
    process.exit(process.exitCode ?? 1);
  })
  .then(() => {
    if (stopping.aborted) process.exit(process.exitCode ?? 0);
  });
