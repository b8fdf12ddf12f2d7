import { runGateway } from '../../roles/gateway';
import { runServe } from '../../roles/serve';
import { roleConfig } from '../context';

/** `settle gateway` and `settle serve` (roles/; `settle worker` is worker.ts: it loads no gateway). */
export async function gateway(): Promise<void> {
  await runGateway(roleConfig());
}

export async function serve(): Promise<void> {
  await runServe(roleConfig());
}
