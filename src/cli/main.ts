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
import { CliError } from './context';

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

program.parseAsync(process.argv).catch((error: unknown) => {
  if (error instanceof CliError) {
    process.stderr.write(`settle: ${error.message}\n`);
    process.exitCode = error.exitCode;
  } else {
    process.stderr.write(
      `settle: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  }
});
