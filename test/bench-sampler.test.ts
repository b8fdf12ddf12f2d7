/**
 * The bench's CPU-per-event figures come from ResourceSampler: what a process tree used during the
 * measured window, a child that already exited included, and the bench process itself without the
 * targets it spawned.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { ResourceSampler, TreeCpu } from '../testkit/processes';

/** A Node process that spins the CPU for `ms` of its own CPU time, then exits (or waits). */
function burner(ms: number, thenWait: boolean) {
  const code = `
    const { cpuUsage } = process;
    const start = cpuUsage();
    while ((cpuUsage(start).user + cpuUsage(start).system) / 1000 < ${ms}) {}
    process.stdout.write('done\\n');
    ${thenWait ? 'setInterval(() => {}, 1000);' : ''}
  `;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const done = new Promise<void>((resolve) =>
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('done') && resolve()),
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, done, exited };
}

test('a target is charged the CPU its tree used in the window, and the bench process is not', async () => {
  const busy = burner(400, true);
  const sampler = new ResourceSampler(() => ({ bench: 'self', busy: busy.child.pid }), ['busy']);
  try {
    await busy.done;
    const usage = sampler.stop();
    assert.ok(usage.busy!.cpuSeconds >= 0.3, `busy used ${usage.busy!.cpuSeconds} s`);
    assert.ok(
      usage.bench!.cpuSeconds < usage.busy!.cpuSeconds,
      `the bench process (${usage.bench!.cpuSeconds} s) was charged its target's CPU`,
    );
    assert.ok(usage.busy!.threads!.main! >= 0.3, 'the main thread did the spinning');
  } finally {
    busy.child.kill('SIGKILL');
    await busy.exited;
  }
});

test('a child that exited during the window still counts (through its parent)', async () => {
  // The parent spawns a spinning child and waits for it: once reaped, its CPU is the parent's cutime.
  const code = `
    const { spawnSync } = require('node:child_process');
    spawnSync(process.execPath, ['-e', "const s = process.cpuUsage(); while ((process.cpuUsage(s).user + process.cpuUsage(s).system) / 1000 < 400) {}"]);
    process.stdout.write('done\\n');
    setInterval(() => {}, 1000);
  `;
  const parent = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => parent.once('exit', () => resolve()));
  const sampler = new ResourceSampler(() => ({ parent: parent.pid }));
  try {
    await new Promise<void>((resolve) =>
      parent.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('done') && resolve()),
    );
    const usage = sampler.stop();
    assert.ok(usage.parent!.cpuSeconds >= 0.3, `the tree used ${usage.parent!.cpuSeconds} s`);
  } finally {
    parent.kill('SIGKILL');
    await exited;
  }
});

test('a reading below the last with the same root pid is dropped, not taken for a restart', () => {
  // A pass over /proc that missed a PostgreSQL backend as it exited reads the tree's total low by the
  // backend's whole CPU; taken for a restart, the tree's whole history (5 s here) was charged to the row.
  const counter = new TreeCpu();
  counter.observe(10, 5.0);
  counter.observe(10, 5.2);
  counter.observe(10, 1.0);
  counter.observe(10, 5.4);
  assert.equal(Math.round(counter.used() * 100) / 100, 0.4);
});

test("a new root pid keeps the old process's CPU and counts the new one's from its start", () => {
  const counter = new TreeCpu();
  counter.observe(10, 5.0);
  counter.observe(10, 6.0);
  counter.observe(11, 0.3);
  counter.observe(11, 0.5);
  assert.equal(Math.round(counter.used() * 100) / 100, 1.5);
});
