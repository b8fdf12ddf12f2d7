import { DefaultFailureConverter } from '@temporalio/common';

/**
 * Failures with their message and stack trace moved into a payload, so that the payload codec
 * encrypts them too (they can quote payload values). Loaded by path (`failureConverterPath`): in the
 * worker, the client and the workflow bundle alike, so this module imports nothing but the SDK.
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
