import type { Client, Connection, ConnectionOptions, TLSConfig } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { Config } from '../config';
import { GrpcStatus } from './grpc-status';

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

/**
 * Whether settle's configuration turns TLS towards Temporal on (`true` or TLS settings): the one check
 * every connection, probe and error message of settle asks.
 */
export function usesTls<C extends Pick<TemporalConnectionConfig, 'temporalTls'>>(
  config: C,
): config is C & { temporalTls: TLSConfig | true } {
  return config.temporalTls !== undefined && config.temporalTls !== false;
}

/** How settle reaches Temporal, in words for error messages: address, TLS, credentials. */
export function describeTemporalConnection(config: TemporalConnectionConfig): string {
  const tlsText = !usesTls(config)
    ? 'TLS off'
    : config.temporalTls === true || !config.temporalTls.clientCertPair
      ? 'TLS on, no client certificate'
      : 'TLS on with a client certificate';
  return `${config.temporalAddress} (${tlsText}${config.temporalApiKey ? ', API key' : ''})`;
}

/** Why Temporal refuses settle, as far as one call can tell. */
export type TemporalProblem = {
  code: 'namespace_not_found' | 'unauthenticated' | 'permission_denied' | 'tls' | 'unreachable';
  message: string;
};

const TLS_FAILURE = /\b(ssl|tls|certificate|handshake|eproto|alpn)\b/i;
/** A frontend that is simply not there (down, or not yet up): nothing is wrong with settle's settings. */
const NOT_THERE =
  /ECONNREFUSED|connection refused|deadline|timed? ?out|DEADLINE_EXCEEDED|No connection established|ENOTFOUND|EAI_AGAIN/i;

/** Names what a failed Temporal call says about settle's configuration. */
export function classifyTemporalError(
  error: unknown,
  context: { namespace: string; connection: string; tls?: boolean },
): TemporalProblem {
  const code = (error as { code?: unknown }).code;
  const detail = error instanceof Error ? error.message : String(error);
  if (code === GrpcStatus.NOT_FOUND || /namespace .*not found/i.test(detail)) {
    return {
      code: 'namespace_not_found',
      message:
        `Temporal namespace "${context.namespace}" does not exist on ${context.connection}: create it ` +
        `(temporal operator namespace create --namespace ${context.namespace}) or set TEMPORAL_NAMESPACE`,
    };
  }
  if (code === GrpcStatus.UNAUTHENTICATED) {
    return {
      code: 'unauthenticated',
      message: `Temporal at ${context.connection} refused settle's credentials (TEMPORAL_API_KEY or the TLS client certificate): ${detail}`,
    };
  }
  if (code === GrpcStatus.PERMISSION_DENIED) {
    return {
      code: 'permission_denied',
      message: `Temporal at ${context.connection} denies settle access to namespace "${context.namespace}": ${detail}`,
    };
  }
  // With TLS on, a frontend that answered and then dropped the connection refused the handshake (a
  // missing or unknown client certificate shows as a transport error, not as a TLS alert).
  if (TLS_FAILURE.test(detail) || (context.tls && !NOT_THERE.test(detail))) {
    return {
      code: 'tls',
      message: `TLS with Temporal at ${context.connection} failed (check the TEMPORAL_TLS_* settings): ${detail}`,
    };
  }
  return { code: 'unreachable', message: `Temporal at ${context.connection} is unreachable: ${detail}` };
}

export type NamespaceCheck = {
  timeoutMs?: number;
  /** Whether the connection uses TLS: a dropped handshake then names TLS, not "unreachable". */
  tls?: boolean;
  /** How a problem's message names the connection (default: the client's address). */
  connection?: string;
};

/**
 * Asks Temporal for the namespace settle runs in (`DescribeNamespace`): undefined when it exists,
 * otherwise what is wrong. One call, within `timeoutMs` (default 5 s).
 */
export async function checkNamespace(
  client: Client,
  { timeoutMs = 5_000, tls = false, connection }: NamespaceCheck = {},
): Promise<TemporalProblem | undefined> {
  const namespace = client.options.namespace;
  try {
    await client.connection.withDeadline(Date.now() + timeoutMs, () =>
      client.workflowService.describeNamespace({ namespace }),
    );
    return undefined;
  } catch (error) {
    return classifyTemporalError(error, {
      namespace,
      // A client on a worker's NativeConnection (`settle serve`, `npm start`) has no options to name.
      connection:
        connection ?? (client.connection as Partial<Connection>).options?.address ?? 'its configured address',
      tls,
    });
  }
}

/**
 * A starting role's namespace check: a missing namespace, refused credentials or TLS end the start
 * (TemporalSetupError). A Temporal that does not answer ends it too with `unreachable: 'refuse'` (a
 * worker, which could not poll); with `'proceed'` (a gateway, which answers 503 meanwhile) the
 * problem is returned for the caller to report.
 */
export async function requireNamespace(
  client: Client,
  check: NamespaceCheck & { unreachable: 'refuse' | 'proceed' },
): Promise<TemporalProblem | undefined> {
  const problem = await checkNamespace(client, check);
  if (problem && (problem.code !== 'unreachable' || check.unreachable === 'refuse')) {
    throw new TemporalSetupError(problem);
  }
  return problem;
}

/** A Temporal that cannot run settle as configured; `problem.message` names the cause. */
export class TemporalSetupError extends Error {
  constructor(readonly problem: TemporalProblem) {
    super(problem.message);
    this.name = 'TemporalSetupError';
  }
}

/** Socket errors that say the frontend is not there (yet), not that it refused settle's TLS. */
const NOT_LISTENING = /ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH/;
/** How long after its handshake a TLS 1.3 server has to refuse a missing client certificate. */
const TLS_REFUSAL_GRACE_MS = 1_000;

/**
 * With TLS on, one handshake with the frontend as gRPC makes it (same CA, server name and client
 * certificate): the server's refusal (no or unknown client certificate, wrong CA, wrong name) named in
 * a message, or undefined when it accepts or is simply not there. A lazy gRPC client only reports
 * such a refusal as a deadline, so `settle gateway` asks this first.
 */
export function probeTls(config: TemporalConnectionConfig, timeoutMs = 5_000): Promise<string | undefined> {
  if (!usesTls(config)) return Promise.resolve(undefined);
  const options = config.temporalTls === true ? {} : config.temporalTls;
  const separator = config.temporalAddress.lastIndexOf(':');
  const host = config.temporalAddress.slice(0, separator).replace(/^\[|\]$/g, '');
  const port = Number(config.temporalAddress.slice(separator + 1));
  const servername = options.serverNameOverride ?? (isIP(host) ? undefined : host);
  return new Promise((resolve) => {
    let settled = false;
    const socket = tlsConnect({
      host,
      port,
      ...(servername ? { servername } : {}),
      ...(options.serverRootCACertificate ? { ca: Buffer.from(options.serverRootCACertificate) } : {}),
      ...(options.clientCertPair
        ? { cert: Buffer.from(options.clientCertPair.crt), key: Buffer.from(options.clientCertPair.key) }
        : {}),
      ALPNProtocols: ['h2'],
    });
    const finish = (problem: string | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    socket.once('secureConnect', () => setTimeout(() => finish(undefined), TLS_REFUSAL_GRACE_MS));
    socket.once('error', (error: Error & { code?: string }) =>
      finish(
        NOT_LISTENING.test(error.code ?? '')
          ? undefined
          : `TLS with Temporal at ${describeTemporalConnection(config)} failed (check the TEMPORAL_TLS_* ` +
              `settings): ${error.message}`,
      ),
    );
  });
}
