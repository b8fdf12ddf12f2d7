import { Command } from 'commander';
import { registerCodecServer } from './commands/codec-server';
import { registerDeployment } from './commands/deployment';
import { registerExample } from './commands/example';
import { registerExceptions } from './commands/exceptions';
import { registerImport } from './commands/import';
import { registerInspect } from './commands/inspect';
import { registerMigrate } from './commands/migrate';
import { registerPurge } from './commands/purge';
import { registerRecover } from './commands/recover';
import { registerReplay } from './commands/replay';
import { registerRoles } from './commands/roles';
import { registerShipments } from './commands/shipments';
import { registerSimulate } from './commands/simulate';
import { registerStats } from './commands/stats';
import { installShutdown, stopping } from '../lib/shutdown';
import { ConfigError } from '../config/error';
import { CliError } from './errors';
import { RoleRefusal } from '../roles/refusal';

// Each command is one file, commands/<name>.ts: its declaration (options, help) and its
// implementation. What the implementation needs beyond commander (src/app, src/db, src/roles, the
// Temporal SDK, pg, the providers, config, ./context) it imports inside the action, so `settle --help`
// and `settle <cmd> --help` load commander and nothing else (test/unit/cli-help-load.test.ts). A role
// (src/worker.ts, roles/<name>.ts) is imported straight from its command. A new command is a register
// function in commands/ and one line below.

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
registerRecover(program);
registerExceptions(program);
registerStats(program);
registerPurge(program);
registerSimulate(program);
registerExample(program);
registerCodecServer(program);
registerDeployment(program);

void program
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    // TemporalSetupError by name: importing temporal/connection for its class would load the SDK.
    if (
      error instanceof CliError ||
      error instanceof ConfigError ||
      error instanceof RoleRefusal ||
      isTemporalSetupError(error)
    ) {
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

function isTemporalSetupError(error: unknown): error is Error {
  return error instanceof Error && error.name === 'TemporalSetupError';
}
