/**
 * How settle declares an environment variable (src/config/schema.ts and each provider's fragment,
 * src/providers/<name>/config.ts): the declaration and the zod schemas several variables share. Pure
 * zod, so the configuration and the providers' table both build on it.
 */
import { z } from 'zod';
import { parseDuration } from './duration';

/**
 * One environment variable: its name, the zod schema its text is parsed with, and the default
 * applied when it is unset or empty, written as a person would set it (so the README and
 * .env.example can show it as is).
 */
export type Variable<S extends z.ZodType = z.ZodType> = {
  name: string;
  schema: S;
  default?: string;
  /** Set by the operating system, not by an operator: named in the README, not in .env.example. */
  system?: boolean;
  /**
   * Holds a secret: <NAME>_FILE may name a file holding it instead (a mounted Secret; load.ts), a
   * value published as an example is refused (example-secrets.ts), and no message prints it.
   */
  secret?: boolean;
};

export function variable<S extends z.ZodType>(
  name: string,
  schema: S,
  options: { default?: string; system?: boolean; secret?: boolean } = {},
): Variable<S> {
  return { name, schema, ...options };
}

/**
 * Every secret's random part has at least this many different characters: a repeated or counted
 * pattern (`aaaa…`, `0123…0123`) has the length of a secret and none of its entropy.
 */
export const SECRET_MIN_DISTINCT = 8;

/** True when `text` (a string's characters, or a key's bytes) has at least SECRET_MIN_DISTINCT different ones. */
export function varied(text: string | Uint8Array): boolean {
  return new Set<string | number>(text).size >= SECRET_MIN_DISTINCT;
}

export const secretList = (message: string, valid: (item: string) => boolean) =>
  z
    .string()
    .optional()
    .transform((value) =>
      (value ?? '')
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean),
    )
    .refine((items) => items.every(valid), { message });

/** A comma-separated list that is not secret (account IDs): empty when unset. */
export const accountList = secretList;

export const booleanFlag = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((value) => value === 'true' || value === '1');

export const httpUrl = z
  .string()
  .url()
  .refine((value) => /^https?:\/\//.test(value), 'must be an http(s) URL');

/** A loopback host: 127.0.0.0/8, ::1 or localhost (a local stand-in for a provider's API). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * A provider's API, scheme://host[:port] with no path. https only, but for a loopback address: the
 * API key travels in every request, and what the API lists is admitted without a signature.
 */
export const providerApiBase = httpUrl
  .refine((value) => {
    const url = new URL(value);
    return url.pathname === '/' && !url.search && !url.hash && value.replace(/\/$/, '') === url.origin;
  }, 'must be scheme://host[:port], with no path')
  .refine((value) => {
    const url = new URL(value);
    return url.protocol === 'https:' || isLoopbackHost(url.hostname);
  }, 'must be https:// (http:// only for a loopback address such as 127.0.0.1)');

export const duration = z.string().transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'must be a duration such as 90d, 36h, 30m or 45s' });
    return z.NEVER;
  }
  return ms;
});
