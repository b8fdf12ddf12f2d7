/**
 * `npx tsx tools/bench/profile-top.ts DIR [--events=N] [--top=20]`: where the CPU of a bench run went,
 * from the `.cpuprofile` files Node's `--cpu-prof` wrote under DIR (`SETTLE_BENCH_WORKER_CPU_PROF_DIR`
 * for `npm run bench`: settle's worker, the no-op worker, the gateway and `settle serve`, one file per
 * thread).
 *
 * For each thread (file), the busy time (samples that were not idle), then the functions with the most
 * self time and the time per part (settle's own code by folder, each npm package, Node's internals by
 * module, V8's garbage collector and compiler), as Markdown tables: docs/performance.md's profiles
 * are this output. `--events=N` adds microseconds per event (N: the events the profiled run handled).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';

type CallFrame = { functionName: string; url: string; lineNumber: number; scriptId: string };
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] };
type Profile = { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };

const args = process.argv.slice(2);
const dir = args.find((arg) => !arg.startsWith('--'));
const events = Number(args.find((arg) => arg.startsWith('--events='))?.slice('--events='.length) ?? 0);
const top = Number(args.find((arg) => arg.startsWith('--top='))?.slice('--top='.length) ?? 20);
if (!dir) {
  process.stderr.write('usage: profile-top.ts DIR [--events=N] [--top=20]\n');
  process.exit(2);
}

function profilesUnder(root: string): string[] {
  return readdirSync(root).flatMap((name) => {
    const path = join(root, name);
    if (statSync(path).isDirectory()) return profilesUnder(path);
    return name.endsWith('.cpuprofile') ? [path] : [];
  });
}

/** The part of the program a frame belongs to: a settle folder, an npm package, a Node module, V8. */
function partOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === '(garbage collector)') return 'V8: garbage collector';
    if (functionName === '(program)') return 'V8: program (compiler, native)';
    if (functionName === '(idle)') return 'idle';
    return `native: ${functionName || '(anonymous)'}`;
  }
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) {
    const module = url.replace(/^node:(internal\/)?/, '').split('/');
    return `node: ${module.slice(0, 2).join('/')}`;
  }
  const src = /\/(src|tools)\/(.+)$/.exec(url);
  if (src) {
    const path = src[2]!.split('/');
    return `settle: ${src[1]}/${path.length > 1 ? path[0] : path[0]!.replace(/\.ts$/, '')}`;
  }
  // The workflow bundle, evaluated in the SDK's sandbox, has its own URLs.
  if (/workflow|webpack/i.test(url)) return 'workflow bundle';
  return url.replace(/^file:\/\//, '');
}

function where(frame: CallFrame): string {
  if (!frame.url) return '';
  const file = frame.url.replace(/^file:\/\//, '');
  const short = file.includes('/node_modules/')
    ? file.slice(file.lastIndexOf('/node_modules/') + '/node_modules/'.length)
    : file.startsWith('/')
      ? relative(process.cwd(), file)
      : file;
  return `${short}:${frame.lineNumber + 1}`;
}

function summarise(path: string) {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const functions = new Map<string, { name: string; where: string; part: string; us: number }>();
  const parts = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const frame = byId.get(id)!.callFrame;
    const part = partOf(frame);
    total += us;
    if (part === 'idle') {
      idle += us;
      continue;
    }
    parts.set(part, (parts.get(part) ?? 0) + us);
    const key = `${frame.functionName}@${frame.url}:${frame.lineNumber}`;
    const entry = functions.get(key) ?? {
      name: frame.functionName || '(anonymous)',
      where: where(frame),
      part,
      us: 0,
    };
    entry.us += us;
    functions.set(key, entry);
  }
  return { path, total, busy: total - idle, functions: [...functions.values()], parts };
}

const ms = (us: number) => (us / 1000).toFixed(0);
const pct = (us: number, of: number) => `${((100 * us) / of).toFixed(1)} %`;
const perEvent = (us: number) => (events > 0 ? ` | ${(us / events).toFixed(0)}` : '');
const perEventHead = events > 0 ? ' | µs/event' : '';
const perEventRule = events > 0 ? ' | --:' : '';

const files = profilesUnder(dir)
  .map(summarise)
  .filter((file) => file.busy > 0);
files.sort((a, b) => b.busy - a.busy);
for (const file of files) {
  const name = relative(dir, file.path) || basename(file.path);
  process.stdout.write(
    `\n### ${name}\n\nbusy ${ms(file.busy)} ms of ${ms(file.total)} ms sampled` +
      (events > 0 ? `, ${(file.busy / events).toFixed(0)} µs per event over ${events} events` : '') +
      '\n\n',
  );
  process.stdout.write(`| part | ms | share${perEventHead} |\n| --- | --: | --:${perEventRule} |\n`);
  for (const [part, us] of [...file.parts].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`| ${part} | ${ms(us)} | ${pct(us, file.busy)}${perEvent(us)} |\n`);
  }
  process.stdout.write(
    `\n| function | where | ms | share${perEventHead} |\n| --- | --- | --: | --:${perEventRule} |\n`,
  );
  for (const fn of file.functions.sort((a, b) => b.us - a.us).slice(0, top)) {
    process.stdout.write(
      `| \`${fn.name}\` | ${fn.where || fn.part} | ${ms(fn.us)} | ${pct(fn.us, file.busy)}${perEvent(fn.us)} |\n`,
    );
  }
}
if (!files.length) process.stderr.write(`no .cpuprofile with samples under ${dir}\n`);
