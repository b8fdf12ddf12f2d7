/** The HTTP limits of the gateway, in one place for the server and the OpenAPI document (docs/limits.md). */

/** Payment webhooks are at most 256 KiB. */
export const MAX_BODY_BYTES = 256 * 1024;

/**
 * A path parameter longer than this is a 414. IDs and keys are at most 200 characters, so every
 * accepted one fits; a longer one up to this length is a 400 naming the parameter.
 */
export const MAX_PARAM_LENGTH = 512;

/** Node's own limit on the request line and headers together (its default); past it, a 431. */
export const MAX_HEADER_BYTES = 16 * 1024;
