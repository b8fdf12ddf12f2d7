import type { ConnectionOptions } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import type { Config } from './config';

export type TemporalConnectionConfig = Pick<
  Config,
  'temporalAddress' | 'temporalApiKey' | 'temporalTls' | 'temporalGrpcMeta'
>;

/**
 * The options of every connection settle opens to Temporal, the gateway's and the CLI's `Connection`
 * and the worker's `NativeConnection` alike, so the two cannot disagree on TLS or credentials. The
 * SDK sends `apiKey` as `Authorization: Bearer <key>` and turns TLS on with it unless `tls` is false.
 */
export function temporalConnectionOptions(
  config: TemporalConnectionConfig,
): ConnectionOptions & NativeConnectionOptions {
  return {
    address: config.temporalAddress,
    ...(config.temporalTls === undefined ? {} : { tls: config.temporalTls }),
    ...(config.temporalApiKey === undefined ? {} : { apiKey: config.temporalApiKey }),
    ...(config.temporalGrpcMeta === undefined ? {} : { metadata: config.temporalGrpcMeta }),
  };
}
