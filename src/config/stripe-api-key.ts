import { readFileSync } from 'node:fs';
import { ConfigError } from './error';
import { configVariables, type Config } from './schema';

/**
 * The Stripe API key the recovery sweep uses: SETTLE_STRIPE_API_KEY, or the content of
 * SETTLE_STRIPE_API_KEY_FILE (a mounted secret), held to the same rule. Undefined when neither is
 * set: no sweep. Both set, a file that cannot be read or a key of the wrong form is a ConfigError
 * naming the variable, so the process stops at start.
 */
export function stripeApiKeyOf(
  config: Pick<Config, 'stripeApiKey' | 'stripeApiKeyFile'>,
): string | undefined {
  const file = config.stripeApiKeyFile;
  if (!file) return config.stripeApiKey;
  const problem = (message: string) => new ConfigError([{ variable: 'SETTLE_STRIPE_API_KEY_FILE', message }]);
  if (config.stripeApiKey) throw problem('is set together with SETTLE_STRIPE_API_KEY: set one of them');
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw problem(`cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)} (${file})`);
  }
  const parsed = configVariables.stripeApiKey.schema.safeParse(text);
  if (!parsed.success || !parsed.data) {
    throw problem(`(${file}) ${parsed.success ? 'is empty' : parsed.error.issues[0]!.message}`);
  }
  return parsed.data;
}
