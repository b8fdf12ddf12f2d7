export { ConfigError, type ConfigIssue } from '../domain/config-error';
