/** The local activity of tools/bench/support/run-shape-workflows.ts. */
export const runShapeActivities = {
  /** Nothing for no input; else the input back with about as much again, as a first pass's result is. */
  async echo(input?: unknown): Promise<unknown> {
    return input === undefined ? null : { input, outcome: 'applied', padding: 'x'.repeat(1_000) };
  },
};
