import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { readFileSync } from 'node:fs';
import { createActivities } from '../src/activities';
import { loadConfig } from '../src/config';
import { createPool } from '../src/db/pool';
import { installTemporalRuntime } from '../src/worker';
const rss = () => Math.round(process.memoryUsage().rss / 1048576);
async function main() {
  if (process.env.MODE === 'build') {
    const b = await bundleWorkflowCode({ workflowsPath: require.resolve('../src/workflows') });
    require('node:fs').writeFileSync('/tmp/wf-bundle.js', b.code);
    console.log('built', rss(), b.code.length); return;
  }
  const config = loadConfig();
  const pool = createPool(config.databaseUrl);
  installTemporalRuntime();
  console.log('start', rss());
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const worker = await Worker.create({
    connection, namespace: 'default', taskQueue: config.taskQueue,
    ...(process.env.MODE === 'prebuilt' ? { workflowBundle: { code: readFileSync('/tmp/wf-bundle.js', 'utf8') } } : { workflowsPath: require.resolve('../src/workflows') }),
    activities: createActivities({ pool }),
  });
  console.log('created', rss());
  const running = worker.run();
  setTimeout(() => { console.log('after 3s', rss(), JSON.stringify(process.memoryUsage())); worker.shutdown(); }, 3000);
  await running; await connection.close(); await pool.end();
}
void main();
