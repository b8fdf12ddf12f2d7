import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../src/lib/paths';
import { TEMPORAL_SERVER_VERSION, TEMPORAL_UI_VERSION } from '../testkit/binaries';
import { DYNAMIC_CONFIG, SERVER_CONFIG_TEMPLATE } from '../testkit/cluster';
import { startTestStack, type TestStack } from '../testkit/harness';

type Service = {
  image?: string;
  entrypoint?: string[];
  volumes?: string[];
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  user?: string;
  read_only?: boolean;
  cap_drop?: string[];
};

/** docker-compose.yml's Temporal containers, and the service each runs. */
const TEMPORAL_CONTAINERS = ['temporal', 'temporal-history', 'temporal-matching', 'temporal-worker'];
const TEMPORAL_SERVICES_BY_CONTAINER = ['frontend', 'history', 'matching', 'worker'];

/** Every endpoint SPEC.md names. */
const SPEC_ENDPOINTS = [
  ['post', '/webhooks/payments'],
  ['post', '/reminders'],
  ['get', '/reminders/{deliveryId}'],
  ['delete', '/reminders/{deliveryId}'],
  ['get', '/healthz'],
  ['get', '/readyz'],
  ['get', '/metrics'],
  ['get', '/events/{eventId}'],
] as const;

describe('docker-compose.yml', () => {
  const compose = parse(readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, Service>;
  };
  const services = compose.services;

  test('has PostgreSQL, the four Temporal services, the UI, the gateway and two workers, each with a health check', () => {
    const long = ['postgres', 'temporal', ...TEMPORAL_CONTAINERS.slice(1), 'temporal-ui', 'gateway'];
    for (const name of [...long, 'worker-1', 'worker-2']) {
      assert.ok(services[name], `service ${name}`);
      assert.ok(services[name]!.healthcheck?.test.length, `${name} has a health check`);
    }
    assert.match(services.postgres!.image!, /^postgres:\d+/);
    assert.equal(services['temporal-ui']!.image, `temporalio/ui:${TEMPORAL_UI_VERSION}`);
    assert.equal(services['temporal-ui']!.environment!.TEMPORAL_ADDRESS, 'temporal:7233');
    assert.ok(
      services['temporal-ui']!.ports!.includes(
        published('SETTLE_UI_PORT', 8233, 8080, 'SETTLE_OPERATOR_BIND_ADDRESS'),
      ),
    );
    assert.ok(existsSync(join(PROJECT_ROOT, 'Dockerfile')));
    // Every stage starts from the official Node.js 24 LTS image (a build argument, so a local
    // equivalent can stand in where no registry answers).
    const dockerfile = readFileSync(join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
    assert.match(dockerfile, /^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((match) => match[1]);
    assert.ok(bases.length >= 2, 'a multi-stage build');
    assert.ok(
      bases.every((base) => base === '${NODE_IMAGE}'),
      `every stage FROM \${NODE_IMAGE}: ${bases.join(', ')}`,
    );
    assert.ok(
      Object.values(services).every((service) => !service.image?.includes('auto-setup')),
      'no deprecated auto-setup image',
    );
  });

  test('runs the Temporal server the topology run runs, each service rendering the one template', () => {
    const templateVariables = new Set(
      [...readFileSync(SERVER_CONFIG_TEMPLATE, 'utf8').matchAll(/env "([A-Z0-9_]+)"/g)].map((m) => m[1]!),
    );
    for (const [name, role] of TEMPORAL_CONTAINERS.map((name, i) => [
      name,
      TEMPORAL_SERVICES_BY_CONTAINER[i]!,
    ])) {
      const service = services[name!]!;
      assert.equal(service.image, `temporalio/server:${TEMPORAL_SERVER_VERSION}`, name);
      const env = service.environment!;
      assert.equal(env.TEMPORAL_SERVICES, role, `${name} runs ${role}`);
      const mount = service.volumes!.find((volume) =>
        volume.endsWith(`:${env.TEMPORAL_SERVER_CONFIG_FILE_PATH}:ro`),
      );
      assert.ok(mount, `${name} mounts its config file`);
      assert.equal(
        join(PROJECT_ROOT, mount.split(':')[0]!),
        SERVER_CONFIG_TEMPLATE,
        `${name}'s config is deploy/temporal/temporal-server.yaml, the topology run's`,
      );
      assert.ok(
        service.volumes!.some((volume) => join(PROJECT_ROOT, volume.split(':')[0]!) === DYNAMIC_CONFIG),
        `${name} mounts deploy/temporal/dynamicconfig.yaml`,
      );
      assert.equal(service.depends_on?.['temporal-schema']?.condition, 'service_completed_successfully');
      const own = ['TEMPORAL_SERVICES', 'TEMPORAL_SERVER_CONFIG_FILE_PATH', 'TEMPORAL_ALLOW_NO_AUTH'];
      for (const variable of Object.keys(env).filter((key) => !own.includes(key)))
        assert.ok(templateVariables.has(variable), `${name} sets ${variable}, which the template reads`);
      assert.equal(env.NUM_HISTORY_SHARDS, '4');
    }
    const tls = parse(readFileSync(join(PROJECT_ROOT, 'docker-compose.tls.yml'), 'utf8'), {
      merge: true,
    }) as {
      services: Record<string, Service>;
    };
    for (const name of TEMPORAL_CONTAINERS) {
      const env = tls.services[name]!.environment!;
      assert.ok(env.TEMPORAL_TLS_FRONTEND_CERT, `${name} gets the frontend certificate with TLS`);
      for (const variable of Object.keys(env))
        assert.ok(templateVariables.has(variable), `the TLS file sets ${variable}, which the template reads`);
    }
  });

  test('sets Temporal up as a deployment does: schemas, then namespace and search attributes, one-shot', () => {
    const schema = services['temporal-schema']!;
    assert.equal(schema.image, `temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}`);
    assert.equal(schema.depends_on?.postgres?.condition, 'service_healthy');
    assert.ok(schema.volumes!.some((volume) => volume.startsWith('./deploy/temporal/setup-schema.sh:')));
    assert.match(schema.entrypoint!.join(' '), /setup-schema\.sh/);
    const namespace = services['temporal-namespace']!;
    assert.equal(namespace.image, `temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}`);
    assert.ok(
      namespace.volumes!.some((volume) => volume.startsWith('./deploy/temporal/setup-namespace.sh:')),
    );
    assert.match(namespace.entrypoint!.join(' '), /setup-namespace\.sh/);
    assert.equal(
      namespace.environment!.TEMPORAL_NAMESPACE,
      services.gateway!.environment!.TEMPORAL_NAMESPACE,
    );
    for (const name of TEMPORAL_CONTAINERS)
      assert.equal(
        namespace.depends_on?.[name]?.condition,
        'service_healthy',
        `namespace set-up waits for ${name}`,
      );
    for (const name of ['gateway', 'worker-1', 'worker-2', 'temporal-ui'])
      assert.equal(
        services[name]!.depends_on?.['temporal-namespace']?.condition,
        'service_completed_successfully',
      );
    const script = readFileSync(join(PROJECT_ROOT, 'deploy', 'temporal', 'setup-namespace.sh'), 'utf8');
    for (const attribute of [
      'ShipmentId',
      'PaymentId',
      'PaymentEventType',
      'SettleOutcome',
      'SettleDeliveryState',
    ])
      assert.match(script, new RegExp(`\\b${attribute}\\b`), `setup-namespace.sh creates ${attribute}`);
  });

  test('least privilege: its own database role per system, passwords required, internals unpublished', () => {
    const text = readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8');
    // No literal password: each comes from a variable compose refuses to run without.
    assert.doesNotMatch(text, /(PASSWORD|PWD): ['"]?(settle|temporal|postgres)['"]?$/m);
    assert.doesNotMatch(text, /postgres:\/\/\w+:\w+@/, 'a DATABASE_URL with a literal password');
    assert.match(services.postgres!.environment!.POSTGRES_PASSWORD!, /^\$\{SETTLE_POSTGRES_PASSWORD:\?/);
    const settleUrl = services.gateway!.environment!.DATABASE_URL!;
    assert.match(settleUrl, /^postgres:\/\/settle:\$\{SETTLE_DB_PASSWORD:\?/);
    const temporalUser = services.temporal!.environment!.POSTGRES_USER;
    assert.ok(
      temporalUser && temporalUser !== 'settle' && temporalUser !== 'postgres',
      `Temporal's role: ${temporalUser}`,
    );
    assert.match(services.temporal!.environment!.POSTGRES_PWD!, /^\$\{TEMPORAL_DB_PASSWORD:\?/);
    assert.equal(services['temporal-schema']!.environment!.POSTGRES_USER, temporalUser);
    const roles = readFileSync(join(PROJECT_ROOT, 'deploy', 'temporal', 'postgres-roles.sh'), 'utf8');
    assert.doesNotMatch(roles, /SUPERUSER/);
    assert.match(roles, /REVOKE ALL ON DATABASE settle FROM PUBLIC/);
    // The unauthenticated frontend, PostgreSQL and the workers' metrics stay on compose's network.
    for (const name of [
      'postgres',
      'temporal',
      'temporal-history',
      'temporal-matching',
      'worker-1',
      'worker-2',
    ])
      assert.deepEqual(services[name]!.ports ?? [], [], `${name} publishes no port`);
    for (const name of ['temporal-ui', 'codec-server'])
      assert.ok(
        services[name]!.ports!.every((port) =>
          port.startsWith('${SETTLE_OPERATOR_BIND_ADDRESS:-127.0.0.1}:'),
        ),
        `${name} is published on the operator bind address`,
      );
  });

  test('runs settle roles with the environment they need, after migrations', () => {
    assert.deepEqual(services.migrate!.command, ['migrate']);
    assert.deepEqual(services.gateway!.command, ['gateway']);
    assert.ok(services.gateway!.ports!.includes(published('SETTLE_GATEWAY_PORT', 8080, 8080)));
    assert.match(services.gateway!.healthcheck!.test.join(' '), /\/readyz/);
    for (const name of ['gateway', 'worker-1', 'worker-2']) {
      const service = services[name]!;
      assert.ok(service.build !== undefined || service.image === 'settle:latest');
      assert.equal(service.depends_on?.migrate?.condition, 'service_completed_successfully');
      assert.equal(service.read_only, true, `${name} runs with a read-only root filesystem`);
      assert.ok(service.user && !/^(0|root)\b/.test(service.user), `${name} runs as a non-root user`);
      assert.deepEqual(service.cap_drop, ['ALL'], `${name} runs without capabilities`);
      const env = service.environment!;
      assert.match(env.DATABASE_URL!, /^postgres:\/\/[^@]+@postgres:5432\/settle$/);
      assert.equal(env.TEMPORAL_ADDRESS, 'temporal:7233');
      for (const variable of [
        'TEMPORAL_NAMESPACE',
        'SETTLE_TASK_QUEUE',
        'SETTLE_CLAIM_RETENTION',
        'SETTLE_API_TOKEN',
      ]) {
        assert.ok(variable in env, `${name} sets ${variable}`);
      }
      assert.match(
        env.SETTLE_WEBHOOK_SECRETS!,
        /^\$\{SETTLE_WEBHOOK_SECRETS:\?/,
        'the secret comes from outside',
      );
    }
    for (const name of ['worker-1', 'worker-2']) {
      assert.deepEqual(services[name]!.command, ['worker']);
      assert.equal(services[name]!.environment!.SETTLE_METRICS_PORT, '9464');
    }
  });
});

describe('the OpenAPI document', () => {
  let stack: TestStack;
  let document: {
    openapi: string;
    paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
    components: { schemas: Record<string, unknown> };
  };
  before(async () => {
    stack = await startTestStack({ worker: false });
    const response = await fetch(`${stack.gatewayUrl}/openapi.json`);
    assert.equal(response.status, 200);
    document = (await response.json()) as typeof document;
  });
  after(async () => {
    await stack.close();
  });

  test('is OpenAPI 3.1 with every endpoint of SPEC.md, each with responses, and every $ref resolving', () => {
    assert.equal(document.openapi, '3.1.0');
    for (const [method, path] of SPEC_ENDPOINTS) {
      const operation = document.paths[path]?.[method];
      assert.ok(operation, `${method.toUpperCase()} ${path}`);
      assert.ok(Object.keys(operation.responses ?? {}).length > 0, `${method} ${path} responses`);
    }
    const webhook = document.paths['/webhooks/payments']!.post!.responses!;
    for (const status of ['200', '202', '400', '401', '405', '409', '413', '415', '503']) {
      assert.ok(webhook[status], `webhook response ${status}`);
    }
    const refs = JSON.stringify(document).match(/"\$ref":"#\/components\/schemas\/([A-Za-z]+)"/g) ?? [];
    assert.ok(refs.length > 5);
    for (const ref of refs) {
      const name = /schemas\/([A-Za-z]+)/.exec(ref)![1]!;
      assert.ok(document.components.schemas[name], `schema ${name}`);
    }
  });

  test('matches the endpoints the README and docs/ name: each one named is documented, each documented one is named', () => {
    const prose = [join(PROJECT_ROOT, 'README.md'), ...markdownUnder(join(PROJECT_ROOT, 'docs'))]
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    // `settle codec-server` is its own server (Temporal's codec protocol, not the gateway's API).
    const codecServer = new Set(['post /decode', 'post /encode']);
    const named = new Set(
      [...prose.matchAll(/\b(GET|POST|PUT|PATCH|DELETE) (\/[\w./{}<>-]*)/g)]
        .map(([, method, path]) => `${method!.toLowerCase()} ${samePath(path!)}`)
        .filter((endpoint) => !codecServer.has(endpoint)),
    );
    const documented = new Set(
      Object.entries(document.paths).flatMap(([path, operations]) =>
        Object.keys(operations)
          .filter((key) => HTTP_METHODS.includes(key))
          .map((method) => `${method} ${samePath(path)}`),
      ),
    );
    assert.ok(named.size >= 8, `the README and docs/ name the endpoints (found ${[...named].join(', ')})`);
    assert.deepEqual(
      [...named].filter((endpoint) => !documented.has(endpoint)),
      [],
      'named in the README or docs/ but not in the OpenAPI document',
    );
    assert.deepEqual(
      [...documented].filter((endpoint) => !named.has(endpoint)),
      [],
      'in the OpenAPI document but named nowhere in the README or docs/',
    );
  });
});

/**
 * A published port as docker-compose.yml writes it: this host's SETTLE_BIND_ADDRESS (the gateway) or
 * SETTLE_OPERATOR_BIND_ADDRESS (what an operator's browser opens), 127.0.0.1 by default, and a host
 * port `variable` can change (the compose check picks free ones).
 */
function published(
  variable: string,
  hostPort: number,
  containerPort: number,
  bind = 'SETTLE_BIND_ADDRESS',
): string {
  return `\${${bind}:-127.0.0.1}:\${${variable}:-${hostPort}}:${containerPort}`;
}

/** The keys of an OpenAPI path item that are operations (others: `parameters`, `summary`…). */
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** `/reminders/<id>`, `/reminders/<delivery id>` and `/reminders/{deliveryId}` are one path. */
function samePath(path: string): string {
  return path.replace(/\{[^}]*\}|<[^>/]*>?/g, '{}').replace(/\/$/, '');
}

function markdownUnder(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(dir, name));
}
