#!/usr/bin/env node
// `npx settle …`: runs the TypeScript sources through tsx, so there is no build step to forget.
require('tsx/cjs');
try {
  require('../src/cli/main.ts');
} catch (error) {
  // A bad variable read while the modules load (SETTLE_LOG_LEVEL, SETTLE_LOG_FILE): its message names it.
  if (error instanceof Error && error.name === 'ConfigError') {
    process.stderr.write(`settle: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
