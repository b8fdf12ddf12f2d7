/**
 * The HTTP limits of the gateway, in one place for the server and the OpenAPI document (docs/limits.md).
 * The request line and headers' limit is every listener's (MAX_HEADER_BYTES, lib/listener-limits.ts).
 */

/** Payment webhooks are at most 256 KiB. */
export const MAX_BODY_BYTES = 256 * 1024;

/**
 * A path parameter longer than this is a 414. IDs and keys are at most 200 characters, so every
 * accepted one fits; a longer one up to this length is a 400 naming the parameter.
 */
export const MAX_PARAM_LENGTH = 512;

/**
 * How long the gateway keeps reading (and discarding) a body it has already refused, once its answer
 * is sent. A client that reads only after sending its whole body still gets the 4xx: closing with
 * body bytes unread would reset the connection and lose the answer. Past this, the connection is
 * closed, so a refused sender cannot hold it open.
 */
export const REFUSED_BODY_DRAIN_MS = 5_000;
