import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The settle checkout (where package.json is): home of `.tools/`, the project-local binaries. */
export const PROJECT_ROOT = (() => {
  let dir = resolve(__dirname);
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
})();
