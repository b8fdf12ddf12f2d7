import { createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { TLSConfig } from '@temporalio/client';
import {
  loadClientConfigProfile,
  toClientOptions,
  type ClientConfigProfile,
  type ConfigDataSource,
} from '@temporalio/envconfig';
import { ConfigError } from './error';
/** What Temporal's environment configuration resolved to, before settle's own checks. */
export type TemporalSettings = {
  address?: string;
  namespace?: string;
  apiKey?: string;
  tls?: TLSConfig | boolean;
  grpcMeta?: Record<string, string>;
  /** The TOML file a profile was read from, named in messages about its keys. */
  profileSource?: string;
};

const TEMPORAL_FLAG_VALUES = ['true', 'false', '1', '0'];

/** The file form of TEMPORAL_API_KEY, as every secret of settle's has one (load.ts: <NAME>_FILE). */
export const TEMPORAL_API_KEY_FILE = 'TEMPORAL_API_KEY_FILE';

/**
 * `env` with TEMPORAL_API_KEY read from the file TEMPORAL_API_KEY_FILE names (a mounted Secret), its
 * content trimmed, as settle reads every <NAME>_FILE: an empty file is an unset key; both set, or a
 * file that cannot be read, is an issue naming TEMPORAL_API_KEY_FILE. No message prints the key.
 */
function withApiKeyFile(
  env: Record<string, string>,
  issues: { variable: string; message: string }[],
): Record<string, string> {
  const file = env[TEMPORAL_API_KEY_FILE];
  if (!file) return env;
  if (env.TEMPORAL_API_KEY) {
    issues.push({
      variable: TEMPORAL_API_KEY_FILE,
      message: 'is set together with TEMPORAL_API_KEY: set one of them',
    });
    return env;
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    issues.push({ variable: TEMPORAL_API_KEY_FILE, message: `cannot be read: ${code} (${file})` });
    return env;
  }
  const key = text.trim();
  if (!key) return env;
  // Also refused by the SDK later, with a message that names no variable: a key is one header value.
  if (/[\r\n]/.test(key)) {
    issues.push({
      variable: TEMPORAL_API_KEY_FILE,
      message: `holds more than one line (${file}): it must hold the key alone`,
    });
    return env;
  }
  return { ...env, TEMPORAL_API_KEY: key };
}

/** Temporal's default config file location on Linux (what the Temporal CLI and SDKs read). */
function defaultTemporalConfigFile(env: Record<string, string>): string | undefined {
  const configHome =
    env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME)
      ? env.XDG_CONFIG_HOME
      : env.HOME
        ? join(env.HOME, '.config')
        : undefined;
  return configHome ? join(configHome, 'temporalio', 'temporal.toml') : undefined;
}

/**
 * Temporal's own environment configuration (@temporalio/envconfig, as the Temporal CLI reads it):
 * the profile TEMPORAL_PROFILE (default `default`) of the TOML file TEMPORAL_CONFIG_FILE (default
 * ~/.config/temporalio/temporal.toml, if present), each key overridden by its variable:
 * TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY (or TEMPORAL_API_KEY_FILE), TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH
 * / _DATA, TEMPORAL_TLS_CLIENT_KEY_PATH / _DATA, TEMPORAL_TLS_SERVER_CA_CERT_PATH / _DATA,
 * TEMPORAL_TLS_SERVER_NAME, TEMPORAL_GRPC_META_<header>. Certificates and keys are read and parsed
 * here, so a missing file or a bad PEM stops the process at start naming its variable.
 */
export function loadTemporalProfile(given: Record<string, string>): TemporalSettings {
  const issues: { variable: string; message: string }[] = [];
  const env = withApiKeyFile(given, issues);
  for (const variable of ['TEMPORAL_TLS', 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION']) {
    if (env[variable] !== undefined && !TEMPORAL_FLAG_VALUES.includes(env[variable])) {
      issues.push({ variable, message: 'must be true or false' });
    }
  }
  if (
    env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION === 'true' ||
    env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION === '1'
  ) {
    issues.push({
      variable: 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
      message:
        "is not supported by Temporal's TypeScript SDK, which settle runs on: set TEMPORAL_TLS_SERVER_NAME " +
        "to a name in the server's certificate instead",
    });
  }
  if (env.TEMPORAL_CONFIG_FILE && !existsSync(env.TEMPORAL_CONFIG_FILE)) {
    issues.push({ variable: 'TEMPORAL_CONFIG_FILE', message: `${env.TEMPORAL_CONFIG_FILE} does not exist` });
  }
  if (issues.length > 0) throw new ConfigError(issues);

  const defaultFile = defaultTemporalConfigFile(env);
  const file = env.TEMPORAL_CONFIG_FILE ?? (defaultFile && existsSync(defaultFile) ? defaultFile : undefined);
  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({ overrideEnvVars: env });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/^Profile '.*' not found/.test(message)) {
      throw new ConfigError([
        {
          variable: 'TEMPORAL_PROFILE',
          message: `no profile "${env.TEMPORAL_PROFILE}" in ${file ?? 'any config file (set TEMPORAL_CONFIG_FILE)'}`,
        },
      ]);
    }
    const both = /Cannot specify both (\w+)_path and \w+_data/.exec(message);
    if (both) {
      const variable = `TEMPORAL_TLS_${both[1]!.toUpperCase()}`;
      throw new ConfigError([
        {
          variable: `${variable}_PATH`,
          message: `set either ${variable}_PATH or ${variable}_DATA (or the profile's ${both[1]}_path or _data), not both`,
        },
      ]);
    }
    throw new ConfigError([
      {
        variable: env.TEMPORAL_CONFIG_FILE ? 'TEMPORAL_CONFIG_FILE' : 'TEMPORAL_PROFILE',
        message: `${file ?? 'the config file'}: ${message}`,
      },
    ]);
  }

  const tls = profile.tls;
  if (tls && tls.disabled !== true) {
    const where = (variable: string, tomlKey: string, kind: 'PATH' | 'DATA') =>
      env[`${variable}_${kind}`] !== undefined
        ? `${variable}_${kind}`
        : `${variable}_${kind} (the profile's ${tomlKey}_${kind.toLowerCase()} in ${file})`;
    const check = (
      source: ConfigDataSource | undefined,
      variable: string,
      tomlKey: string,
      parse: (pem: Buffer) => unknown,
      what: string,
    ) => {
      if (!source) return;
      const name = where(variable, tomlKey, 'path' in source ? 'PATH' : 'DATA');
      let bytes: Buffer;
      try {
        bytes = 'path' in source ? readFileSync(source.path) : Buffer.from(source.data);
      } catch (error) {
        issues.push({
          variable: name,
          message: `cannot read ${'path' in source ? source.path : 'it'}: ${(error as Error).message}`,
        });
        return;
      }
      try {
        parse(bytes);
      } catch {
        issues.push({ variable: name, message: `is not a PEM ${what}` });
      }
    };
    check(
      tls.clientCert,
      'TEMPORAL_TLS_CLIENT_CERT',
      'client_cert',
      (pem) => new X509Certificate(pem),
      'certificate',
    );
    check(
      tls.clientKey,
      'TEMPORAL_TLS_CLIENT_KEY',
      'client_key',
      (pem) => createPrivateKey(pem),
      'private key',
    );
    check(
      tls.serverCACert,
      'TEMPORAL_TLS_SERVER_CA_CERT',
      'server_ca_cert',
      (pem) => new X509Certificate(pem),
      'certificate',
    );
    if (!tls.clientCert !== !tls.clientKey) {
      issues.push({
        variable: tls.clientCert ? 'TEMPORAL_TLS_CLIENT_KEY_PATH' : 'TEMPORAL_TLS_CLIENT_CERT_PATH',
        message:
          'a client certificate needs its private key and the key its certificate: set both (path or data)',
      });
    }
  }
  if (issues.length > 0) throw new ConfigError(issues);

  // The SDK's own mapping: an API key turns TLS on unless TLS is explicitly disabled.
  const { connectionOptions, namespace } = toClientOptions(profile);
  return {
    address: connectionOptions.address,
    namespace,
    apiKey: typeof connectionOptions.apiKey === 'string' ? connectionOptions.apiKey : undefined,
    tls: connectionOptions.tls ?? undefined,
    grpcMeta: profile.grpcMeta,
    profileSource: file,
  };
}
