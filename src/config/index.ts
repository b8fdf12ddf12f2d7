/**
 * settle's configuration: every environment variable is declared once, in schema.ts, and parsed here
 * (load.ts); the `Config` type is inferred from that schema. Workflow code never imports this module.
 */
export { ConfigError } from './error';
export { EXAMPLE_SECRETS, isExampleSecret } from './example-secrets';
export {
  combinationIssues,
  CONFIG_DEFAULTS,
  DEFAULT_DELIVERY_STUCK_AFTER_MS,
  DEFAULT_HOST,
  loadConfig,
  loadConfigPart,
  loadSettings,
  secretFileVariable,
  withProviderDefaults,
  type ProviderSettings,
} from './load';
export {
  configVariables,
  settingsVariables,
  TEMPORAL_SYSTEM_VARIABLES,
  TEMPORAL_VARIABLES,
  type Config,
  type Variable,
} from './schema';
