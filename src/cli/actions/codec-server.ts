import { loadCodecConfig, runCodecServer } from '../../roles/codec';

/** `settle codec-server` (roles/codec.ts). */
export async function codecServer(): Promise<void> {
  await runCodecServer(loadCodecConfig());
}
