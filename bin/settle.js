#!/usr/bin/env node
// `npx settle …`. Which code runs, by one rule:
// - a tree with src/ (a clone, a development checkout) runs the TypeScript sources through tsx, so
//   there is no build step to forget and an old dist/ is never run by mistake;
// - a tree without src/ (the image: its runtime stage copies dist/ only) runs the compiled dist/;
// - SETTLE_USE_DIST=1 runs dist/ from a clone, on purpose (to measure or check `npm run build`).
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const fromSources =
  process.env.SETTLE_USE_DIST !== '1' && existsSync(join(__dirname, '..', 'src', 'cli', 'main.ts'));

function run(main) {
  try {
    require(main);
  } catch (error) {
    // A bad variable read while the modules load (SETTLE_LOG_LEVEL, SETTLE_LOG_FILE): its message names it.
    if (error instanceof Error && error.name === 'ConfigError') {
      process.stderr.write(`settle: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

if (fromSources) {
  // tsx's loader (what `node --import tsx` loads): its CommonJS and ESM hooks both, as the commands'
  // implementations are loaded with import() (src/cli/main.ts).
  import('tsx').then(
    () => run('../src/cli/main.ts'),
    (error) => {
      process.stderr.write(`settle: cannot load tsx to run the sources (npm ci?): ${error.message}\n`);
      process.exit(1);
    },
  );
} else {
  run('../dist/cli/main.js');
}
