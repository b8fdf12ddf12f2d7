/**
 * The verdict lines of the proof tools (compose, topology, k8s, manifests, chaos): each check prints
 * PASS or FAIL as it ends, its detail and each failure under it; the last line is "N passed, M
 * failed", and a failure (or no check at all) makes the exit code 1.
 */
export type CheckResult = { failures: string[]; detail?: string };

/** `key=value …`: a check's figures on one line. */
export const figuresText = (figures: Record<string, number | string>): string =>
  Object.entries(figures)
    .map(([key, value]) => `${key}=${value}`)
    .join(' ');

/** Collects failures: `expect(condition, message)` records the message when the condition is false. */
export function failureList() {
  const failures: string[] = [];
  const expect = (condition: boolean, message: string) => {
    if (!condition) failures.push(message);
  };
  return { failures, expect, check: expect };
}

export const errorText = (error: unknown, stack = false): string =>
  error instanceof Error ? (stack && error.stack) || error.message : String(error);

export class Checks {
  readonly outcomes: { name: string; ok: boolean }[] = [];
  /** Set once interrupted: no further check starts. */
  stopped = false;

  /** `detailOnFailure`: a passing check's detail is not printed (long tool output). */
  constructor(private readonly options: { detailOnFailure?: boolean } = {}) {}

  get failed(): number {
    return this.outcomes.filter((outcome) => !outcome.ok).length;
  }

  /** Runs one check: a thrown error or a non-empty failure list is a FAIL. Prints it at once. */
  async run(name: string, body: () => Promise<CheckResult>): Promise<boolean> {
    if (this.stopped) return false;
    const started = Date.now();
    let result: CheckResult;
    try {
      result = await body();
    } catch (error) {
      result = { failures: [`threw: ${errorText(error)}`] };
    }
    return this.record(`${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`, result);
  }

  /** Records and prints a verdict reached elsewhere. */
  record(name: string, { failures, detail }: CheckResult): boolean {
    const ok = failures.length === 0;
    this.outcomes.push({ name, ok });
    const out = [`${ok ? 'PASS' : 'FAIL'}  ${name}`];
    if (detail && (!ok || !this.options.detailOnFailure)) out.push(detail.replace(/^/gm, '        '));
    for (const failure of failures) out.push(`        ✗ ${failure.replace(/\n/g, '\n          ')}`);
    process.stdout.write(`${out.join('\n')}\n`);
    return ok;
  }

  /** Prints "N passed, M failed" and sets the exit code. */
  summary(prefix = ''): void {
    process.stdout.write(`\n${prefix}${this.outcomes.length - this.failed} passed, ${this.failed} failed\n`);
    if (this.failed || !this.outcomes.length) process.exitCode = 1;
  }
}

/** A tool's entry point: an error that escapes `main` is printed (`name: …`, `stack`: its stack) and exits 1. */
export function runMain(name: string, main: () => Promise<unknown>, { stack = false } = {}): void {
  main().catch((error: unknown) => {
    process.stderr.write(`${name}: ${errorText(error, stack)}\n`);
    process.exitCode = 1;
  });
}
