import type { Config } from '../config';
import { unsetTargetVariables } from '../domain/outbox';

/**
 * A role that cannot start as configured (a secret or downstream target missing, TLS refused): the
 * message names the cause and what to set, for the person at the terminal (no stack trace).
 */
export class RoleRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RoleRefusal';
  }
}

/**
 * Refuses a worker (`settle worker`, `settle serve`) without every delivery target's URL and a secret
 * to sign with: it could deliver no payment.
 */
export function refuseWithoutTargets(config: Config): void {
  const missing = unsetTargetVariables(config);
  if (missing.length === 0) return;
  throw new RoleRefusal(
    `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not set: a worker without its ` +
      'downstream targets cannot deliver payments. Set them (only `npm start` runs stand-ins).',
  );
}
