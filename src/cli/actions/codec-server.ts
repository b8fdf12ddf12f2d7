import { CODEC_SERVER_SETTINGS, startCodecServer } from '../../codec/server';
import { loadConfigPart } from '../../config';
import { logger } from '../../lib/logger';
import { onShutdown } from '../../lib/shutdown';
import { EncryptionCodec, StaticKeySource } from '../../temporal/payload-codec';
import { CliError } from '../errors';

/** `settle codec-server`: runs until SIGINT/SIGTERM, then finishes open calls and stops. */
export async function codecServer(): Promise<void> {
  const config = loadConfigPart(CODEC_SERVER_SETTINGS);
  const missing = [
    ...(config.payloadKeys?.length ? [] : ['SETTLE_PAYLOAD_KEYS (or SETTLE_PAYLOAD_KEYS_FILE)']),
    ...(config.codecToken ? [] : ['SETTLE_CODEC_TOKEN']),
  ];
  if (missing.length) {
    throw new CliError(`${missing.join(' and ')} not set: the codec server needs the keys and its token.`);
  }
  const server = await startCodecServer({
    codec: new EncryptionCodec(new StaticKeySource(config.payloadKeys!)),
    token: config.codecToken!,
    namespace: config.temporalNamespace,
    corsOrigins: config.codecCorsOrigin ? [config.codecCorsOrigin] : [],
    host: config.host,
    port: config.codecPort,
    logger,
  });
  logger.info(
    { url: server.url, namespace: config.temporalNamespace, corsOrigin: config.codecCorsOrigin ?? null },
    'codec server listening',
  );
  await new Promise<void>((resolve) => onShutdown('codec server', () => server.close().then(resolve)));
}
