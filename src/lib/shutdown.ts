/**
 * The one owner of SIGINT and SIGTERM in every settle process (each role and each command; see
 * cli/main.ts). The first signal starts a graceful stop: `stopping` aborts, and every stop registered
 * with `onShutdown` runs (a worker drains, a gateway stops accepting, a command finishes what is in
 * flight). Whatever is still unfinished after the deadline, the process exits anyway, non-zero,
 * naming what it was waiting on; a second signal exits at once. A process that registered no stop
 * exits at once with 128 + the signal number, as Node would. The Temporal runtime is installed without
 * signal handlers of its own (src/worker-runtime/create-worker.ts), so nothing else decides.
 */

/** From the first signal to the forced exit: under the 10 s a supervisor gives before SIGKILL. */
export const SHUTDOWN_DEADLINE_MS = 8_000;

const SIGNAL_NUMBERS = { SIGINT: 2, SIGTERM: 15 } as const;
type StopSignal = keyof typeof SIGNAL_NUMBERS;

type Stop = { name: string; stop: () => unknown; done: boolean };

const stops = new Set<Stop>();
const controller = new AbortController();
let installed = false;

/** Aborted by the first SIGINT or SIGTERM; long waits observe it. */
export const stopping: AbortSignal = controller.signal;

/**
 * From the first signal to the end of a worker's drain (its `shutdownGraceTime`): what it still runs
 * then is cancelled, so the drain ends before the deadline with time to report the cancelled attempts.
 */
export const DRAIN_GRACE_MS = SHUTDOWN_DEADLINE_MS / 2;
const drainController = new AbortController();

/**
 * `signal` (an activity's cancellation), aborted too once a stopping process's drain grace is over.
 * Temporal cancels a durable activity at the worker's shutdownGraceTime but not a local one, which
 * the drain would wait on for its whole timeout (a delivery's 15 s request, past the deadline): every
 * activity's I/O takes this signal, so no in-flight attempt outlasts the drain.
 */
export function untilDrained(signal: AbortSignal): AbortSignal {
  return AbortSignal.any([signal, drainController.signal]);
}

/**
 * Registers a graceful stop, run on the first signal; the process waits for the promise it returns
 * (up to the deadline). Returns the function that unregisters it once the part has stopped on its own.
 */
export function onShutdown(name: string, stop: () => unknown): () => void {
  const entry: Stop = { name, stop, done: false };
  stops.add(entry);
  return () => {
    entry.done = true;
    stops.delete(entry);
  };
}

/** What the process still waits on, for the forced exit's message. */
function pending(): string {
  const names = [...stops].filter((entry) => !entry.done).map((entry) => entry.name);
  return names.length ? names.join(', ') : 'open handles after every part stopped';
}

function exitNow(code: number, message: string): never {
  process.stderr.write(`settle: ${message}\n`);
  process.exit(code);
}

function onSignal(signal: StopSignal) {
  const code = 128 + SIGNAL_NUMBERS[signal];
  if (controller.signal.aborted) exitNow(code, `${signal} again: exiting now; was waiting on ${pending()}`);
  if (stops.size === 0) exitNow(code, `stopped by ${signal}`);
  controller.abort(new Error(`stopped by ${signal}`));
  process.stderr.write(
    `settle: ${signal}: stopping (${[...stops].map((entry) => entry.name).join(', ')})…\n`,
  );
  const deadline = setTimeout(
    () =>
      exitNow(1, `${signal}: still waiting on ${pending()} after ${SHUTDOWN_DEADLINE_MS / 1000} s; exiting`),
    SHUTDOWN_DEADLINE_MS,
  );
  // The timer alone never keeps the process alive; anything else that does, it ends.
  deadline.unref();
  setTimeout(
    () => drainController.abort(new Error(`${signal}: drain grace of ${DRAIN_GRACE_MS / 1000} s over`)),
    DRAIN_GRACE_MS,
  ).unref();
  for (const entry of [...stops].reverse()) {
    void Promise.resolve()
      .then(entry.stop)
      .catch((error: unknown) =>
        process.stderr.write(`settle: stopping ${entry.name} failed: ${String(error)}\n`),
      )
      .finally(() => {
        entry.done = true;
        stops.delete(entry);
      });
  }
}

/**
 * `work`'s result, or `otherwise` once `ms` have passed, whichever comes first: the bound every wait
 * of a stop path puts on what it waits for (a child's exit, a drain, a server's close), so the caller
 * can name what outlasted it. The timer is cleared either way, so the bound never holds the process
 * open once the work is done.
 */
export async function within<T, U>(work: Promise<T>, ms: number, otherwise: U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<U>((resolve) => (timer = setTimeout(() => resolve(otherwise), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Takes over SIGINT and SIGTERM for this process; once, at start. */
export function installShutdown(): void {
  if (installed) return;
  installed = true;
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
}
