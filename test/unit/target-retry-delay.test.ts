/**
 * When a delivery the target did not take asks again (activities/target-gate.ts, retryDelayAfter).
 * A failed call (5xx, timeout) comes back no later than a held call would, whatever its attempt, so a
 * row whose probe failed late in an outage is not left waiting minutes after the target is back; a
 * paused call never comes back before the target's Retry-After.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HELD_MAX_WAIT_MS, retryDelayAfter } from '../../src/activities/target-gate';
import { failureFor } from '../../src/activities/downstream';
import { ErrorCode } from '../../src/domain/errors';

const ATTEMPTS = [1, 2, 5, 8, 12, 30, 200];

describe('a delivery the target did not take asks again', () => {
  test('after a failure: a backoff that grows with the attempts, never past a held call’s longest wait', () => {
    for (const attempt of ATTEMPTS) {
      for (let i = 0; i < 50; i += 1) {
        const delay = retryDelayAfter({ answer: 'failure' }, attempt);
        const backoff = Math.min(1_000 * 2 ** (attempt - 1), HELD_MAX_WAIT_MS);
        assert.ok(delay >= backoff * 0.8 && delay <= backoff * 1.2, `attempt ${attempt}: ${delay} ms`);
      }
    }
    assert.ok(retryDelayAfter({ answer: 'failure' }, 30) <= 1.2 * HELD_MAX_WAIT_MS);
  });

  test('after a pause: never before the Retry-After, and behind the calls it held', () => {
    for (const attempt of ATTEMPTS) {
      const delay = retryDelayAfter({ answer: 'pause', pauseMs: 3_000 }, attempt);
      assert.ok(delay >= 3_000 + 1_000, `attempt ${attempt}: ${delay} ms`);
    }
  });

  test('the failure Temporal retries carries settle’s own wait, and names only the target’s', () => {
    const failed = failureFor({
      kind: 'retry',
      code: ErrorCode.DownstreamUnavailable,
      statusCode: 503,
      detail: 'HTTP 503',
      backoffMs: 4_000,
    });
    assert.equal(failed.nextRetryDelay, 4_000);
    assert.equal(failed.message, 'HTTP 503', 'a wait settle chose is not the target’s Retry-After');
    const paused = failureFor({
      kind: 'retry',
      code: ErrorCode.DownstreamThrottled,
      statusCode: 429,
      detail: 'HTTP 429',
      delayMs: 2_000,
    });
    assert.equal(paused.nextRetryDelay, 2_000);
    assert.equal(paused.message, 'HTTP 429, retry after 2000 ms');
  });
});
