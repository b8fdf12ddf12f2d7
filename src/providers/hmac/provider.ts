/**
 * `hmacProvider(spec)`: an HMAC provider's whole module, built from its spec alone: its variables and
 * their cross-check, its route's adapter and its export's, its OpenAPI path, its simulator and its
 * deploy needs. A provider of this kind adds its spec to HMAC_PROVIDER_SPECS (../hmac-providers.ts)
 * and nothing else in src/.
 */
import { ConfigError } from '../../domain/config-error';
import { defineProvider, type OpenApiParts, type ProviderModule } from '../module';
import { createHmacAdapter } from './adapter';
import { hmacCombinationIssues, hmacConfigOf, hmacVariables, type HmacVariablesOf } from './config';
import { pointerPath } from './json-pointer';
import { simulateHmacRequest } from './simulate';
import type { HmacProviderSpec } from './spec';

/** The variables a gateway needs to take `spec`'s webhooks, as messages name them. */
function webhookVariables(spec: HmacProviderSpec): string {
  const { keys, notificationUrl } = spec.variables;
  return notificationUrl ? `${keys} with ${notificationUrl}` : keys;
}

/** How the signature reads, for /openapi.json. */
function signatureDescription(spec: HmacProviderSpec): string {
  const { header, content, algorithm, encoding, toleranceSeconds } = spec.signature;
  const digest = `${encoding} HMAC-${algorithm.toUpperCase()}`;
  const covered =
    content === '{body}'
      ? 'the raw body'
      : content === '{url}{body}'
        ? `${spec.variables.notificationUrl} followed by the raw body`
        : 'the timestamp, a dot and the raw body';
  const form =
    header.format === 'plain'
      ? `\`${header.prefix ?? ''}<${digest}>\``
      : `\`${header.timestampKey}=<unix seconds>,${header.signatureKey}=<${digest}>[,…]\``;
  const within = toleranceSeconds === undefined ? '' : ` within ${toleranceSeconds} s`;
  return `${form} of ${covered}; any signature matching any of ${spec.variables.keys}${within}.`;
}

/** What each provider type becomes, for /openapi.json. */
function typesDescription(spec: HmacProviderSpec): string {
  return Object.entries(spec.types)
    .map(([type, rule]) =>
      'status' in rule
        ? `${type} by ${pointerPath(rule.status)} (${Object.entries(rule.to)
            .map(([status, to]) => `${status} → ${to.replace('payment.', '')}`)
            .join(', ')})`
        : `${type} → ${rule.to.replace('payment.', '')}`,
    )
    .join('; ');
}

/** `POST <route>` in /openapi.json. */
function hmacOpenApi(spec: HmacProviderSpec, { everyRoute, json, ref, rejected, unavailable }: OpenApiParts) {
  const label = spec.displayName;
  const fields = spec.fields;
  return {
    [spec.route]: {
      post: {
        operationId: `receive${spec.name[0]!.toUpperCase()}${spec.name.slice(1)}Event`,
        summary: `A ${label} webhook event, verified by its HMAC (docs/providers.md).`,
        description:
          `${typesDescription(spec)}; any other type is ignored. The settle event ID is \`${spec.name}:\` and ` +
          `${pointerPath(fields.eventId)}; the shipment is ${fields.shipment.map(pointerPath).join(', else ')}. ` +
          'Every field is read from the signed body.' +
          (spec.mode
            ? ' With SETTLE_PROVIDER_MODE set, an event of the other mode is ignored and writes nothing.'
            : ''),
        parameters: [
          {
            name: spec.signature.header.name,
            in: 'header',
            required: true,
            description: signatureDescription(spec),
            schema: { type: 'string' },
          },
        ],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: { type: 'object', additionalProperties: true, description: `A ${label} event.` },
            },
          },
        },
        responses: {
          ...everyRoute,
          '200': json(
            { oneOf: [ref('Duplicate'), ref('Ignored'), ref('Unmatched')] },
            'Already known (duplicate), a type settle does not act on (ignored), or no shipment named (unmatched).',
          ),
          '202': json(ref('Accepted'), 'New event; its workflow start is durable.'),
          '400': rejected(`Signed, but not a ${label} event settle can read (field path in \`issues\`).`),
          '401': rejected('Missing, garbled or wrong signature, or no key configured.'),
          '405': rejected('Wrong method.'),
          '409': rejected('Same event ID with a different payload; the original effect stands.'),
          '413': rejected('Body larger than 256 KiB.'),
          '415': rejected('Not application/json.'),
          '503': unavailable,
        },
      },
    },
  };
}

/** The provider module of the HMAC provider `spec` declares. */
export function hmacProvider<S extends HmacProviderSpec>(spec: S): ProviderModule<HmacVariablesOf<S>> {
  const configOf = (config: object) => hmacConfigOf(spec, config as Record<string, unknown>);
  return defineProvider<HmacVariablesOf<S>>({
    name: spec.name,
    label: spec.displayName,
    variables: hmacVariables(spec),
    combinationIssues: (config) => hmacCombinationIssues(spec, config as Record<string, unknown>),
    takesWebhooks: (config) => configOf(config).keys.length > 0,
    webhookVariables: webhookVariables(spec),
    route: { kind: 'event' },
    webhookAdapter(config) {
      try {
        return createHmacAdapter(spec, configOf(config));
      } catch (error) {
        // The configuration refuses what the engine would (load.ts); a configuration built by other
        // means stops the start here, naming the variables all the same.
        throw new ConfigError([{ variable: spec.variables.keys, message: (error as Error).message }]);
      }
    },
    exportAdapter: () => createHmacAdapter(spec, { keys: [] }),
    openapi: (parts) => hmacOpenApi(spec, parts),
    simulator: {
      signer(config) {
        const { keys, notificationUrl } = configOf(config);
        const key = keys[0];
        const needsUrl = spec.signature.content === '{url}{body}';
        if (!key || (needsUrl && !notificationUrl)) {
          return { ok: false, message: `--provider ${spec.name} needs ${webhookVariables(spec)}.` };
        }
        return {
          ok: true,
          sign: (event) => simulateHmacRequest(spec, event, key, { url: notificationUrl }),
        };
      },
    },
    deploy: {
      variables: [
        { name: spec.variables.keys, secret: true, required: true },
        ...(spec.variables.notificationUrl
          ? [{ name: spec.variables.notificationUrl, secret: false, required: true }]
          : []),
      ],
      files: [],
      egress: [],
    },
  });
}
