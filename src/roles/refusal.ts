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
