/** A bad or missing variable; the message names every one, so the process can stop with it. */
export class ConfigError extends Error {
  constructor(readonly issues: { variable: string; message: string }[]) {
    super(
      `Invalid configuration:\n${issues.map((issue) => `  ${issue.variable}: ${issue.message}`).join('\n')}`,
    );
    this.name = 'ConfigError';
  }
}

/** One variable settle refuses, with what to set. */
export type ConfigIssue = ConfigError['issues'][number];
