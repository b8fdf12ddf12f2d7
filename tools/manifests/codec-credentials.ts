import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../../src/lib/paths';

/** The compose files whose services the credentials check reads (the TLS file merges over the first). */
export const COMPOSE_FILES = ['docker-compose.yml', 'docker-compose.tls.yml'];

type Service = {
  environment?: Record<string, unknown> | string[];
  volumes?: (string | { source?: string })[];
};
export type ComposeFile = { name: string; services: Record<string, Service> };

export function readComposeFiles(): ComposeFile[] {
  return COMPOSE_FILES.map((name) => {
    const doc = parse(readFileSync(join(PROJECT_ROOT, name), 'utf8'), { merge: true }) as {
      services?: Record<string, Service>;
    };
    return { name, services: doc.services ?? {} };
  });
}

/**
 * The codec server holds no Temporal credential in any compose file: none of `credentials` in its
 * environment, and no volume of the TLS directory (the client keys). Each failure a sentence.
 */
export function composeCredentialProblems(files: ComposeFile[], credentials: readonly string[]): string[] {
  const problems: string[] = [];
  for (const { name, services } of files) {
    const codec = services['codec-server'];
    if (!codec) continue;
    const env = Array.isArray(codec.environment)
      ? codec.environment.map((e) => e.split('=')[0]!)
      : Object.keys(codec.environment ?? {});
    for (const variable of env.filter((v) => credentials.includes(v)))
      problems.push(`${name}: codec-server holds a Temporal credential (${variable})`);
    for (const volume of codec.volumes ?? []) {
      const source = typeof volume === 'string' ? volume.split(':')[0]! : (volume.source ?? '');
      if (/tls|temporal/i.test(source))
        problems.push(`${name}: codec-server mounts ${source} (Temporal's keys)`);
    }
  }
  if (!files.some((f) => f.services['codec-server']))
    problems.push('no codec-server service in the compose files');
  return problems;
}
