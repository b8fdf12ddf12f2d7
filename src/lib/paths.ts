import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadSettings } from '../config';

/** The settle checkout (where package.json is): home of `.tools/`, the project-local binaries. */
export const PROJECT_ROOT = (() => {
  let dir = resolve(__dirname);
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
})();

/**
 * `.settle/` in the folder settle was started from: the one-machine stack's data and state.
 * SETTLE_HOME moves it (tests run a second stack beside a developer's own).
 */
export function stateDir(cwd: string = process.cwd()): string {
  return loadSettings().home ?? join(cwd, '.settle');
}
