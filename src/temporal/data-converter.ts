import type { DataConverter } from '@temporalio/common';
import type { Config } from '../config';
import { EncryptionCodec, StaticKeySource, type PayloadKeySource } from './payload-codec';

/** What decides whether settle's payloads are encrypted: the keys, parsed from the environment. */
export type PayloadKeysConfig = Pick<Config, 'payloadKeys'>;

/** The failure converter module, named by path: the SDK loads it in the worker and the workflow bundle. */
export const FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

/** Payloads and failure messages encrypted under the source's keys (a KMS's, or the configured ones). */
function encryptingDataConverter(source: PayloadKeySource): DataConverter {
  return { payloadCodecs: [new EncryptionCodec(source)], failureConverterPath: FAILURE_CONVERTER_PATH };
}

/**
 * The data converter of every client and worker settle makes: with SETTLE_PAYLOAD_KEYS (or its file)
 * set, {@link encryptingDataConverter} under those keys; without, undefined, the SDK's default (plain
 * JSON payloads). A side with keys still reads payloads written before they were set.
 */
export function settleDataConverter(config: PayloadKeysConfig): DataConverter | undefined {
  return config.payloadKeys?.length
    ? encryptingDataConverter(new StaticKeySource(config.payloadKeys))
    : undefined;
}
