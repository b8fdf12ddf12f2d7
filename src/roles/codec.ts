import { CODEC_SERVER_SETTINGS, startCodecServer } from '../codec/server';
import { loadConfigPart, type Config } from '../config';
import { logger } from '../lib/logger';
import { onShutdown } from '../lib/shutdown';
import { EncryptionCodec, StaticKeySource } from '../temporal/payload-codec';
import { RoleRefusal } from './refusal';
import { listeningOn } from '../config/port-in-use';

/** What a codec server reads (CODEC_SERVER_SETTINGS). */
export type CodecConfig = Pick<Config, (typeof CODEC_SERVER_SETTINGS)[number]>;

/** The codec server's settings from `env`: only its own, so a worker's or gateway's are not needed. */
export function loadCodecConfig(env: NodeJS.ProcessEnv = process.env): CodecConfig {
  return loadConfigPart(CODEC_SERVER_SETTINGS, env);
}

/**
 * The codec server over the payload keys, on HOST:SETTLE_CODEC_PORT; `corsOrigins` when
 * SETTLE_CODEC_CORS_ORIGIN is unset (`npm start` passes its UI's). Refused without keys or token.
 */
export function startCodec(config: CodecConfig, defaultCorsOrigins: string[] = []) {
  const missing = [
    ...(config.payloadKeys?.length ? [] : ['SETTLE_PAYLOAD_KEYS (or SETTLE_PAYLOAD_KEYS_FILE)']),
    ...(config.codecToken ? [] : ['SETTLE_CODEC_TOKEN']),
  ];
  if (missing.length) {
    throw new RoleRefusal(`${missing.join(' and ')} not set: the codec server needs the keys and its token.`);
  }
  return listeningOn(
    'SETTLE_CODEC_PORT',
    config.codecPort,
    startCodecServer({
      codec: new EncryptionCodec(new StaticKeySource(config.payloadKeys!)),
      token: config.codecToken!,
      namespace: config.temporalNamespace,
      corsOrigins: config.codecCorsOrigin ? [config.codecCorsOrigin] : defaultCorsOrigins,
      host: config.host,
      port: config.codecPort,
      limits: config,
      logger,
    }),
  );
}

/** `settle codec-server`: runs until SIGINT/SIGTERM, then finishes open calls and stops. */
export async function runCodecServer(config: CodecConfig): Promise<void> {
  const server = await startCodec(config);
  logger.info(
    { url: server.url, namespace: config.temporalNamespace, corsOrigin: config.codecCorsOrigin ?? null },
    'codec server listening',
  );
  await new Promise<void>((resolve) => onShutdown('codec server', () => server.close().then(resolve)));
}
