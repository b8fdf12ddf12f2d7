/**
 * settle's configuration: every environment variable is declared once, in schema.ts, and parsed here
 * (load.ts); the `Config` type is inferred from that schema. Workflow code never imports this module.
 */
export { ConfigError } from './error';
export {
  CONFIG_DEFAULTS,
  DEFAULT_DELIVERY_STUCK_AFTER_MS,
  DEFAULT_HOST,
  loadConfig,
  loadConfigPart,
  loadSettings,
} from './load';
export {
  configVariables,
  settingsVariables,
  TEMPORAL_SYSTEM_VARIABLES,
  TEMPORAL_VARIABLES,
  type Config,
  type Variable,
} from './schema';
export { stripeApiKeyOf } from './stripe-api-key';
