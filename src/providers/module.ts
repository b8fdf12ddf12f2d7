import type { z } from 'zod';
import type { ConfigIssue } from '../domain/config-error';
import type { Variable } from '../domain/env-variables';
import type { PaymentEvent } from '../domain/payment-event';
import type { AccountRule } from '../domain/payment-rules';
import type { RecoverySource } from './recovery-source';
import type { ProviderAdapter, ProviderMode } from './types';

/** A provider's variables, keyed by their configuration key (src/config/schema.ts spreads them in). */
export type ProviderVariables = Record<string, Variable>;

/** A provider's variables as the configuration parses them, plus the mode every provider reads. */
export type ProviderConfigOf<V extends ProviderVariables> = { [K in keyof V]: z.output<V[K]['schema']> } & {
  providerMode?: ProviderMode;
};

/**
 * What a provider's OpenAPI part is built with (src/gateway/openapi-schemas.ts): the answers every
 * route shares, a JSON response, a reference to a component, a refusal, the 503.
 */
export type OpenApiParts = {
  everyRoute: Record<string, object>;
  json: (schema: object, description: string, headers?: object) => object;
  ref: (name: string) => object;
  rejected: (description: string) => object;
  unavailable: object;
};

/** What a module logs through at the gateway's start (settle's logger, src/lib/logger.ts, is one). */
export type ProviderLogger = { warn(fields: object, message: string): void };

/** A request as a provider would send it, for `settle simulate --provider`. */
export type SimulatedRequest = { path: string; body: string; headers: Record<string, string> };

/**
 * How the provider's webhook route takes a request: `event`, one event per request (Stripe);
 * `batch`, several items each admitted before the request is acknowledged with `accepted` (Adyen),
 * an unreadable item naming its place through `itemPath`.
 */
export type ProviderRoute =
  { kind: 'event' } | { kind: 'batch'; accepted: string; itemPath: (index: number, path: string) => string };

/** The roles a provider's secret is mounted in: the gateway verifies webhooks, the worker sweeps. */
export type ProviderRole = 'gateway' | 'worker';

/**
 * What a provider needs where settle is deployed, as data: the deploy-wiring test checks `.env.example`,
 * compose, the kustomize manifests and the chart against it. `variables`: each of the provider's
 * variables (`secret`: read from a Secret, with its _FILE form; `required`: the route refuses
 * everything without it; `roles`: the roles that mount a secret, the gateway when unsaid).
 * `files`: a variable naming a file to mount. `egress`: a host the processes reach, and when.
 */
export type ProviderDeploy = {
  variables: { name: string; secret: boolean; required?: boolean; roles?: ProviderRole[] }[];
  files: { variable: string; what: string }[];
  egress: { host: string; port: number; when: string }[];
};

/**
 * One payment provider, in one folder (src/providers/<name>/), registered in src/providers/registry.ts.
 * Every surface iterates the registry: the gateway's routes and their start-up check, /openapi.json,
 * metrics labels, `settle import`, `settle simulate`, `settle recover`, the recovery Schedules, the
 * configuration and the database's checks on the provider columns.
 */
export interface ProviderModule<V extends ProviderVariables = ProviderVariables> {
  /** Its key in the registry: `/webhooks/<name>`, the `provider` column, the metrics label. */
  readonly name: string;
  /** How messages and logs name it (`Stripe`). */
  readonly label: string;
  /** Its variables (src/providers/<name>/config.ts), declared as every variable is. */
  readonly variables: V;
  /** Its variables each valid alone that settle refuses together, each named with what to set. */
  combinationIssues(config: ProviderConfigOf<V>): ConfigIssue[];
  /**
   * True when the configuration lets its route verify a delivery: a gateway with no such provider and
   * no Standard Webhooks secret refuses to start.
   */
  takesWebhooks(config: ProviderConfigOf<V>): boolean;
  /** The variables that make `takesWebhooks` true, for the message of a gateway that cannot start. */
  readonly webhookVariables: string;
  readonly route: ProviderRoute;
  /**
   * The route's adapter, built once at the gateway's start from the configuration: a file a variable
   * names that cannot be read stops the start (a ConfigError naming the variable). `testing`: the
   * adapter's options that no variable sets, for tests (a loopback stand-in).
   */
  webhookAdapter(
    config: ProviderConfigOf<V>,
    context: { logger?: ProviderLogger; testing?: Record<string, unknown> },
  ): ProviderAdapter;
  /** The adapter `settle import --provider` reads the provider's own export with: no signature. */
  exportAdapter(): ProviderAdapter;
  /** Its route's OpenAPI path item(s), keyed by path, built with the document's own parts. */
  openapi(parts: OpenApiParts): Record<string, unknown>;
  /** Its events API, where it has one: the recovery sweep and `settle recover` read it. */
  readonly recovery?: {
    /** The variables the sweep needs, as messages name them. */
    readonly credentials: string;
    /** The variable setting the sweep's interval. */
    readonly everyVariable: string;
    on(config: ProviderConfigOf<V>): boolean;
    everyMs(config: ProviderConfigOf<V>): number;
    source(config: ProviderConfigOf<V>): RecoverySource;
  };
  /**
   * `settle simulate --provider <name>`: what it signs with, read from the configuration and the
   * command's options (a message saying what to set when something is missing), and the request the
   * provider would send for a canonical event.
   */
  readonly simulator: {
    signer(
      config: ProviderConfigOf<V>,
      options: { signingKeyFile?: string },
    ): { ok: true; sign(event: PaymentEvent): SimulatedRequest } | { ok: false; message: string };
  };
  /** Whose payments settle applies (the payment rule reads it), where the provider names an account. */
  accountRule?(config: ProviderConfigOf<V>): AccountRule;
  /** What it needs where settle is deployed (ProviderDeploy). */
  readonly deploy: ProviderDeploy;
}

/** Declares a provider module, keeping its variables' types for the configuration's. */
export function defineProvider<V extends ProviderVariables>(module: ProviderModule<V>): ProviderModule<V> {
  return module;
}
