/**
 * The delivery targets' table (src/domain/outbox.ts, DELIVERY_TARGETS) owns each target's rules: its
 * undo, how its answers are read, which addresses it may reach, and its variables. What reads the
 * table follows it by itself; what cannot read it (compose, the Kubernetes manifests, the Helm chart,
 * the example files) is checked against it here, so a target added to the table fails this test,
 * naming the line, until each of those has it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { signedBody, targetCallPolicy } from '../../src/activities/downstream';
import { secretFileVariable } from '../../src/config';
import {
  DELIVERY_TARGETS,
  deliveryTarget,
  downstreamIdempotencyKey,
  OUTBOX_TARGETS,
  targetSecretVariable,
} from '../../src/domain/outbox';
import { PROJECT_ROOT } from '../../src/lib/paths';

const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8');
/** The `NAME=` lines of an env file (a commented `# NAME=` counts: an example to fill in). */
const envNames = (path: string) =>
  new Set([...read(path).matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map(([, name]) => name!));

const TARGETS = OUTBOX_TARGETS.map((target) => ({
  target,
  url: DELIVERY_TARGETS[target].variable,
  secret: targetSecretVariable(target),
}));

describe('the delivery targets table', () => {
  test("each target's variables are named after it", () => {
    for (const { target, url, secret } of TARGETS) {
      assert.equal(url, `SETTLE_${target.toUpperCase()}_URL`, `${target}: its URL variable`);
      assert.equal(DELIVERY_TARGETS[target].configKey, `${target}Url`, `${target}: its config key`);
      assert.equal(secret, `SETTLE_${target.toUpperCase()}_SECRET`, `${target}: its secret variable`);
    }
  });

  test('the carrier is undone as before: the same body, key, notes and status', () => {
    const undo = deliveryTarget('carrier').undo!;
    const row = { shipmentId: 'SHP-1', body: { shipment_id: 'SHP-1', payment_id: 'pi_1', reason: 'x' } };
    assert.equal(
      signedBody({ audience: 'carrier', body: { action: undo.action, ...undo.body(row) } }),
      '{"action":"hold","shipment_id":"SHP-1","payment_id":"pi_1","reason":"compensation","audience":"carrier"}',
    );
    assert.equal(downstreamIdempotencyKey('evt_1', 'carrier', undo.keyAction), 'evt_1:carrier:rehold');
    assert.equal(undo.name, 're-hold');
    assert.equal(undo.status, 'reheld');
    assert.equal(undo.note, 'compensated: the carrier re-held the shipment');
    assert.equal(undo.holdsShipment, true);
    assert.equal(deliveryTarget('erp').undo, undefined, 'the ERP is undone in the ledger');
  });

  test("a target's answers and addresses follow its entry", () => {
    for (const target of OUTBOX_TARGETS) {
      const entry = deliveryTarget(target);
      for (const allowPrivateTargets of [false, true]) {
        const call = targetCallPolicy({ allowPrivateTargets }, entry);
        assert.equal(call.allowPrivateTargets, entry.network === 'private' || allowPrivateTargets, target);
        assert.equal(call.policy.isPermanent(422), entry.internal, `${target}: a 422`);
        assert.equal(call.policy.isPermanent(410), true, `${target}: a 410`);
        for (const status of [408, 429, 500, 503])
          assert.equal(call.policy.isPermanent(status), false, `${target}: a ${status}`);
      }
    }
    // Today's two are the operator's own APIs on its own network, as they always were.
    assert.deepEqual(
      OUTBOX_TARGETS.map((target) => [
        target,
        deliveryTarget(target).internal,
        deliveryTarget(target).network,
      ]),
      [
        ['carrier', true, 'private'],
        ['erp', true, 'private'],
      ],
    );
    // A third party's public receiver: only 410 ends it, and private addresses only with the flag.
    const external = { internal: false, network: 'public' } as const;
    assert.equal(targetCallPolicy({}, external).policy.isPermanent(422), false);
    assert.equal(targetCallPolicy({}, external).policy.isPermanent(410), true);
    assert.equal(targetCallPolicy({}, external).allowPrivateTargets, false);
    assert.equal(targetCallPolicy({ allowPrivateTargets: true }, external).allowPrivateTargets, true);
  });
});

describe("every target in what cannot read the table (docs/delivery.md, 'A new target')", () => {
  test('docker-compose.yml passes each URL variable to settle', () => {
    const doc = parse(read('docker-compose.yml'), { merge: true }) as Record<string, Record<string, unknown>>;
    const environment = doc['x-settle-environment']!;
    for (const { url } of TARGETS)
      assert.equal(environment[url], `\${${url}:-}`, `docker-compose.yml, x-settle-environment: ${url}`);
  });

  test('the example files name each URL and secret variable', () => {
    const dotenv = envNames('.env.example');
    const secrets = envNames('deploy/kubernetes/base/secrets/settle.env.example');
    for (const { url, secret } of TARGETS) {
      assert.ok(dotenv.has(url), `.env.example: ${url}=`);
      assert.ok(dotenv.has(secret), `.env.example: ${secret}=`);
      assert.ok(secrets.has(secret), `deploy/kubernetes/base/secrets/settle.env.example: ${secret}=`);
    }
  });

  test("the Kubernetes manifests' config and workers give each target its URL and secret", () => {
    const config = envNames('deploy/kubernetes/base/config.env');
    for (const { url } of TARGETS) assert.ok(config.has(url), `deploy/kubernetes/base/config.env: ${url}=`);
    for (const path of [
      'deploy/kubernetes/base/worker.yaml',
      'deploy/kubernetes/overlays/rollout/worker-next.yaml',
    ]) {
      const pods = parseAllDocuments(read(path))
        .map((doc) => doc.toJS() as WorkerObject)
        .filter((object) => object?.kind === 'Deployment')
        .map((object) => object.spec.template.spec);
      assert.ok(pods.length > 0, `${path}: no worker Deployment`);
      for (const pod of pods) {
        const env = pod.containers.find((c) => c.name === 'settle')?.env ?? [];
        const items = pod.volumes?.find((v) => v.name === 'secrets')?.secret?.items ?? [];
        for (const { secret } of TARGETS) {
          assert.equal(
            env.find((e) => e.name === secretFileVariable(secret))?.value,
            `/etc/settle/secrets/${secret}`,
            `${path}: env ${secretFileVariable(secret)}`,
          );
          assert.ok(
            items.some((item) => item.key === secret && item.path === secret),
            `${path}: the secrets volume's item ${secret}`,
          );
        }
      }
    }
  });

  test("the Helm chart's values and worker template give each target its URL and secret", () => {
    const values = parse(read('deploy/helm/settle/values.yaml')) as { config: Record<string, string> };
    const schema = JSON.parse(read('deploy/helm/settle/values.schema.json')) as {
      properties: { config: { propertyNames: { not: { pattern: string } } } };
    };
    const refusedAsValue = new RegExp(schema.properties.config.propertyNames.not.pattern);
    // The chart's secret keys are one table (settle.secretKeyTable, files/secret-keys.yaml): each key,
    // the roles that mount it.
    const table = parse(read('deploy/helm/settle/files/secret-keys.yaml')) as Record<
      string,
      { roles: string[]; required: boolean }
    >;
    const keys = Object.entries(table)
      .filter(([, entry]) => entry.required && entry.roles.includes('worker'))
      .map(([key]) => key);
    for (const { url, secret } of TARGETS) {
      assert.ok(url in values.config, `deploy/helm/settle/values.yaml, config: ${url}`);
      assert.ok(
        refusedAsValue.test(secret),
        `deploy/helm/settle/values.schema.json: ${secret} is no config value`,
      );
      assert.ok(keys.includes(secret), `deploy/helm/settle/files/secret-keys.yaml: ${secret} for the worker`);
    }
  });
});

type WorkerObject = {
  kind: string;
  spec: {
    template: {
      spec: {
        containers: { name: string; env?: { name: string; value?: string }[] }[];
        volumes?: { name: string; secret?: { items?: { key: string; path: string }[] } }[];
      };
    };
  };
};
