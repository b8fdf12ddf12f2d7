import type { Command } from 'commander';

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
        'by its environment alone (docs/operations.md, "Payment data in Temporal").',
    )
    .action(async () => {
      const { loadCodecConfig, runCodecServer } = await import('../../roles/codec.js');
      await runCodecServer(loadCodecConfig());
    });
}
