/**
 * Worker Deployments without a server: the worker's options with and without SETTLE_BUILD_ID, the
 * variables' rules, each workflow's behaviour, and a versioned worker's failure naming its build.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config';
import {
  runVersion,
  versionedWorkerFailure,
  workerDeploymentOptions,
} from '../../src/temporal/worker-versioning';
import * as workflows from '../../src/workflows';
import { VERSIONING_BEHAVIORS } from '../../src/workflows/versioning-behaviors';

const base = { DATABASE_URL: 'postgres://settle@127.0.0.1/settle', TEMPORAL_ADDRESS: '127.0.0.1:7233' };

describe('Worker Deployments', () => {
  test('unset SETTLE_BUILD_ID: an unversioned worker, as before', () => {
    const config = loadConfig(base, { temporal: 'dev-stack' });
    assert.equal(config.buildId, undefined);
    assert.equal(config.deploymentName, 'settle');
    assert.equal(workerDeploymentOptions(config), undefined);
  });

  test('SETTLE_BUILD_ID: the worker joins SETTLE_DEPLOYMENT_NAME as that build, pinned by default', () => {
    const config = loadConfig(
      { ...base, SETTLE_BUILD_ID: '1.5.0', SETTLE_DEPLOYMENT_NAME: 'settle-eu' },
      { temporal: 'dev-stack' },
    );
    assert.deepEqual(workerDeploymentOptions(config), {
      version: { deploymentName: 'settle-eu', buildId: '1.5.0' },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    });
  });

  test('a build ID with a space or a slash is refused, naming the variable', () => {
    for (const value of ['1.5 0', 'feature/x']) {
      assert.throws(
        () => loadConfig({ ...base, SETTLE_BUILD_ID: value }, { temporal: 'dev-stack' }),
        (error: unknown) => error instanceof ConfigError && /SETTLE_BUILD_ID/.test(error.message),
      );
    }
  });

  test('a versioned worker that stops names its build, its deployment and the cause', () => {
    const failure = versionedWorkerFailure(new Error('Worker Deployments are disabled'), {
      buildId: '1.5.0',
      deploymentName: 'settle',
    });
    assert.ok(failure instanceof Error);
    assert.match(failure.message, /build 1\.5\.0 of Worker Deployment settle/);
    assert.match(failure.message, /Worker Deployments are disabled/);
    const unversioned = new Error('other');
    assert.equal(versionedWorkerFailure(unversioned, {}), unversioned);
  });

  test("a run's build as `settle inspect` shows it", () => {
    assert.deepEqual(
      runVersion({ behavior: 1, deploymentVersion: { deploymentName: 'settle', buildId: 'v1' } }),
      {
        version: { deployment: 'settle', build_id: 'v1', behavior: 'pinned' },
      },
    );
    assert.deepEqual(runVersion({ behavior: 0 }), {});
    assert.deepEqual(runVersion(undefined), {});
  });

  test('every workflow says how it follows a rollout: payments pinned, reminders and the purge move', () => {
    const names = Object.entries(workflows)
      .filter(([, value]) => typeof value === 'function')
      .map(([name]) => name)
      .sort();
    assert.deepEqual(Object.keys(VERSIONING_BEHAVIORS).sort(), names);
    assert.equal(VERSIONING_BEHAVIORS.paymentWorkflow, 'PINNED');
    assert.equal(VERSIONING_BEHAVIORS.reminderWorkflow, 'AUTO_UPGRADE');
    for (const name of names) {
      const fn = (workflows as unknown as Record<string, { workflowDefinitionOptions?: unknown }>)[name]!;
      assert.equal(typeof fn.workflowDefinitionOptions, 'function', `${name} declares its behaviour`);
    }
  });
});
