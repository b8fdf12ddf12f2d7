import { runWorker } from '../../roles/worker';
import { roleConfig } from '../context';

/** `settle worker` (roles/worker.ts): apart from the gateway's modules (fastify, the provider libraries), which it never loads. */
export async function worker(): Promise<void> {
  await runWorker(roleConfig());
}
