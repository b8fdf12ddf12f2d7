import type { Command } from 'commander';
import { startCodecServer } from '../../codec/server';
import { loadConfigPart } from '../../config';
import { logger } from '../../lib/logger';
import { onShutdown } from '../../lib/shutdown';
import { EncryptionCodec, StaticKeySource } from '../../temporal/payload-codec';
import { CliError } from '../context';

/** `settle codec-server`: the Temporal UI's and CLI's way to read settle's encrypted payloads. */
export function registerCodecServer(program: Command) {
  program
    .command('codec-server')
    .description(
      "Serve Temporal's remote codec protocol (POST /decode, POST /encode) with settle's payload keys " +
        '(SETTLE_PAYLOAD_KEYS or SETTLE_PAYLOAD_KEYS_FILE), so the Temporal UI and `temporal workflow show ' +
        '--codec-endpoint` show decrypted payloads. Every call needs Authorization: Bearer ' +
        '$SETTLE_CODEC_TOKEN (or the token as the path segment before /decode, for a UI without single ' +
        'sign-on), else 401; browser calls are answered for SETTLE_CODEC_CORS_ORIGIN only; calls naming ' +
        'another namespace than TEMPORAL_NAMESPACE (X-Namespace) are refused. Listens on ' +
        'HOST:SETTLE_CODEC_PORT, /healthz included; SIGTERM or SIGINT stops it within 3 s. Configured ' +
        'by its environment alone (docs/operations.md, "Payload encryption").',
    )
    .action(async () => {
      const config = loadConfigPart([
        'payloadKeys',
        'payloadKeysFile',
        'codecToken',
        'codecPort',
        'codecCorsOrigin',
        'host',
        'temporalNamespace',
      ]);
      const missing = [
        ...(config.payloadKeys?.length ? [] : ['SETTLE_PAYLOAD_KEYS (or SETTLE_PAYLOAD_KEYS_FILE)']),
        ...(config.codecToken ? [] : ['SETTLE_CODEC_TOKEN']),
      ];
      if (missing.length) {
        throw new CliError(
          `${missing.join(' and ')} not set: the codec server needs the keys and its token.`,
        );
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
    });
}
