/**
 * The real Temporal server as a tool of the repository, installed like the Temporal CLI
 * (src/stack/temporal-binaries.ts): built once from the Go module proxy into `.tools/` and reused.
 *
 * - `.tools/temporal-server-<version>/bin/temporal-server`   (go.temporal.io/server cmd/server)
 * - `.tools/temporal-server-<version>/bin/temporal-sql-tool` (go.temporal.io/server cmd/tools/sql)
 * - `.tools/temporal-server-<version>/schema/postgresql/v12/{temporal,visibility}/versioned`, copied
 *   from the module source at build time (temporal-sql-tool's `update-schema` reads them)
 * - `.tools/temporal-ui-server-<version>/bin/temporal-ui-server` (github.com/temporalio/ui-server/v2)
 *
 * A folder counts only once its `.complete` marker is written, so an interrupted build starts over.
 * A fresh machine compiles for minutes; progress goes to stderr, so CI logs
 * show what is happening. Needs `go` (1.21 or later: it fetches the pinned toolchain itself).
 */
import { spawn } from 'node:child_process';
import {
  chmodSync,
  readFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../src/lib/paths';

/** The Temporal server release the topology, docker-compose.yml and the docs pin. */
export const TEMPORAL_SERVER_VERSION = '1.32.2';
/** The standalone UI server (v2.58.1 does not build from the module proxy). */
export const TEMPORAL_UI_VERSION = '2.56.4';
/** The Go toolchain the server release builds with (fetched by `go` itself through GOTOOLCHAIN). */
export const GO_TOOLCHAIN = 'go1.27.3';
/** Helm (helm.sh/helm/v4's cmd/helm): the manifest check renders the chart with it, k8s:check installs it. */
export const HELM_VERSION = '4.3.2';

const SERVER_MODULE = 'go.temporal.io/server';
const UI_MODULE = 'github.com/temporalio/ui-server/v2';
/** Schema folders of the server module that temporal-sql-tool applies (PostgreSQL 12+). */
const SCHEMA_DIRS = ['schema/postgresql/v12/temporal', 'schema/postgresql/v12/visibility'];

export type TemporalServerTools = {
  server: string;
  sqlTool: string;
  /** The schema folder: `postgresql/v12/{temporal,visibility}/versioned` below it. */
  schemaDir: string;
  ui: string;
};

const serverDir = () => join(PROJECT_ROOT, '.tools', `temporal-server-${TEMPORAL_SERVER_VERSION}`);
const uiDir = () => join(PROJECT_ROOT, '.tools', `temporal-ui-server-${TEMPORAL_UI_VERSION}`);

function toolsIn(): TemporalServerTools {
  return {
    server: join(serverDir(), 'bin', 'temporal-server'),
    sqlTool: join(serverDir(), 'bin', 'temporal-sql-tool'),
    schemaDir: join(serverDir(), 'schema'),
    ui: join(uiDir(), 'bin', 'temporal-ui-server'),
  };
}

const complete = (dir: string) => existsSync(join(dir, '.complete'));

/** The tools when already built, else undefined (nothing is built). */
export function builtTemporalServerTools(): TemporalServerTools | undefined {
  return complete(serverDir()) && complete(uiDir()) ? toolsIn() : undefined;
}

/** Finds the built tools, or builds what is missing (minutes on a fresh machine). */
export async function ensureTemporalServerTools(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<TemporalServerTools> {
  if (!complete(serverDir())) {
    await buildInto(serverDir(), log, async (go) => {
      await goInstall(go, `${SERVER_MODULE}/cmd/server@v${TEMPORAL_SERVER_VERSION}`, log);
      await goInstall(go, `${SERVER_MODULE}/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`, log);
      renameSync(join(go.work, 'bin', 'server'), join(go.work, 'bin', 'temporal-server'));
      renameSync(join(go.work, 'bin', 'sql'), join(go.work, 'bin', 'temporal-sql-tool'));
      const source = await moduleSource(go, `${SERVER_MODULE}@v${TEMPORAL_SERVER_VERSION}`);
      for (const dir of SCHEMA_DIRS) copyWritable(join(source, dir), join(go.work, dir));
    });
  }
  if (!complete(uiDir())) {
    await buildInto(uiDir(), log, async (go) => {
      await goInstall(go, `${UI_MODULE}/cmd/server@v${TEMPORAL_UI_VERSION}`, log);
      renameSync(join(go.work, 'bin', 'server'), join(go.work, 'bin', 'temporal-ui-server'));
    });
  }
  return toolsIn();
}

/** Where and how `go` runs for one build: `work` is the folder being filled (GOBIN is its bin/). */
export type GoContext = { work: string; cwd: string; env: NodeJS.ProcessEnv };

/** Builds into a scratch folder beside `dir`, then moves it in place and marks it complete. */
export async function buildInto(
  dir: string,
  log: (line: string) => void,
  build: (go: GoContext) => Promise<void>,
): Promise<void> {
  const started = Date.now();
  mkdirSync(join(PROJECT_ROOT, '.tools'), { recursive: true });
  const unlock = await lock(`${dir}.lock`, log);
  if (complete(dir)) return unlock(); // another process built it meanwhile
  const work = `${dir}.partial`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'bin'), { recursive: true });
  // Outside any Go module, so the main module's go.mod (there is none) cannot interfere.
  const cwd = mkdtempSync(join(tmpdir(), 'settle-go-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GOTOOLCHAIN: GO_TOOLCHAIN,
    GOFLAGS: '-mod=mod',
    GOBIN: join(work, 'bin'),
    CGO_ENABLED: '0',
  };
  log(
    `topology: building ${dir.slice(PROJECT_ROOT.length + 1)} with ${GO_TOOLCHAIN} (once; minutes on a fresh machine)`,
  );
  try {
    await build({ work, cwd, env });
    rmSync(dir, { recursive: true, force: true });
    renameSync(work, dir);
    writeFileSync(join(dir, '.complete'), `${new Date().toISOString()}\n`);
    log(`topology: built ${dir.slice(PROJECT_ROOT.length + 1)} in ${seconds(started)}`);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
    unlock();
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** One build at a time per folder (two `npm run topology` at once): a lock file holding the pid. */
async function lock(path: string, log: (line: string) => void): Promise<() => void> {
  let told = false;
  for (;;) {
    try {
      writeFileSync(path, String(process.pid), { flag: 'wx' });
      return () => rmSync(path, { force: true });
    } catch {
      let holder: number;
      try {
        holder = Number(readFileSync(path, 'utf8'));
      } catch {
        continue; // released meanwhile
      }
      if (!processAlive(holder) || holder === process.pid) {
        rmSync(path, { force: true });
        continue;
      }
      if (!told) log(`topology: waiting for process ${holder}, which is building the same tools`);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }
}

/**
 * `go install -v module/cmd@version`: prints one line per package compiled; those are counted and a
 * progress line is logged every 30 s (with what is being downloaded or compiled).
 */
function goInstall(go: GoContext, target: string, log: (line: string) => void): Promise<void> {
  return goRun(go, ['install', '-v', target], log);
}

/** `go <args>` (with -v, for the progress lines) in the build's folder and environment. */
export function goRun(go: GoContext, args: string[], log: (line: string) => void): Promise<void> {
  const started = Date.now();
  const target = args.join(' ');
  log(`topology: go ${target}`);
  return new Promise((resolve, reject) => {
    const child = spawn('go', args, {
      cwd: go.cwd,
      env: go.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let packages = 0;
    let downloads = 0;
    let last = '';
    let tail = '';
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-4000);
      for (const line of text.split('\n')) {
        if (!line.trim()) continue;
        if (line.startsWith('go: downloading')) downloads += 1;
        else if (!line.startsWith('go:') && !line.startsWith('#')) packages += 1;
        last = line.trim();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const timer = setInterval(
      () =>
        log(
          `topology:   ${seconds(started)}: ${downloads} modules downloaded, ${packages} packages compiled (${last})`,
        ),
      30_000,
    );
    child.once('error', (error) => {
      clearInterval(timer);
      reject(
        new Error(
          `Could not run \`go\` (${error.message}). Building the Temporal server needs Go 1.21 or later on PATH ` +
            `(it fetches ${GO_TOOLCHAIN} itself).`,
        ),
      );
    });
    child.once('exit', (code) => {
      clearInterval(timer);
      if (code === 0) {
        log(`topology:   done in ${seconds(started)} (${packages} packages compiled)`);
        resolve();
      } else reject(new Error(`go ${target} failed (exit ${code}):\n${tail.trim()}`));
    });
  });
}

/** Where the Go module cache holds the module's source (`go mod download -json`). */
export function moduleSource(go: GoContext, module: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('go', ['mod', 'download', '-json', module], {
      cwd: go.cwd,
      env: go.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      try {
        const { Dir } = JSON.parse(out) as { Dir?: string };
        if (code === 0 && Dir) return resolve(Dir);
      } catch {
        // reported below
      }
      reject(new Error(`go mod download ${module} failed:\n${(err || out).trim()}`));
    });
  });
}

/** Copies a folder out of the (read-only) module cache, leaving the copy writable and removable. */
function copyWritable(from: string, to: string): void {
  cpSync(from, to, { recursive: true });
  const walk = (path: string) => {
    const directory = statSync(path).isDirectory();
    chmodSync(path, directory ? 0o755 : 0o644);
    if (directory) for (const entry of readdirSync(path)) walk(join(path, entry));
  };
  walk(to);
}

function seconds(since: number): string {
  const total = Math.round((Date.now() - since) / 1000);
  return total >= 60 ? `${Math.floor(total / 60)} min ${total % 60} s` : `${total} s`;
}
