/**
 * `npm run chart:secret-keys`: writes the chart's secret key table (deploy/helm/settle/files/
 * secret-keys.yaml) from the providers' table; the deploy-wiring test fails while it is stale.
 */
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { CHART_SECRET_KEYS, chartSecretKeys } from '../../testkit/deploy-wiring';

writeFileSync(CHART_SECRET_KEYS, chartSecretKeys());
process.stdout.write(`wrote ${relative(PROJECT_ROOT, CHART_SECRET_KEYS)}\n`);
