import { CancellationScope, log } from '@temporalio/workflow';

type Compensation = { name: string; run: (reason: string) => Promise<unknown> };

/**
 * Compensations for a multi-step flow. Each is added *before* its step runs, because a step that
 * failed ambiguously (a timeout after the receiver applied it) may still have taken effect; so every
 * compensation must be idempotent and safe to run for a step that never happened. `compensate` runs
 * them newest first, each to the end even when an earlier one failed, and cannot be cancelled midway.
 */
export class Saga {
  private readonly compensations: Compensation[] = [];

  add(name: string, run: (reason: string) => Promise<unknown>): void {
    this.compensations.push({ name, run });
  }

  async compensate(reason: string): Promise<void> {
    await CancellationScope.nonCancellable(async () => {
      let firstFailure: unknown;
      for (const compensation of [...this.compensations].reverse()) {
        try {
          await compensation.run(reason);
        } catch (error) {
          log.error('compensation failed', { compensation: compensation.name });
          firstFailure ??= error;
        }
      }
      if (firstFailure !== undefined) throw firstFailure;
    });
  }
}
