import { ConfigError } from './error';

/**
 * Awaits a listener's start; a port another process holds (EADDRINUSE) or one this user may not bind
 * (EACCES) stops the process with a ConfigError naming the variable that chose it, so the operator
 * knows what to change rather than reading a bare `listen EADDRINUSE`.
 */
export async function listeningOn<T>(variable: string, port: number, listening: Promise<T>): Promise<T> {
  try {
    return await listening;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE')
      throw new ConfigError([
        {
          variable,
          message: `port ${port} is already in use by another process: set ${variable} to a free port`,
        },
      ]);
    if (code === 'EACCES')
      throw new ConfigError([
        { variable, message: `port ${port} may not be bound by this user: set ${variable}` },
      ]);
    throw error;
  }
}
