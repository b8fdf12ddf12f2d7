import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

/**
 * Where a listener's port is picked: below the system's ephemeral range. A port the system hands out
 * for `listen(0)` comes from the range it also gives every outgoing connection its local port from, so
 * on a busy machine (two test runs side by side, each with hundreds of PostgreSQL and Temporal
 * connections) a port picked free is soon the local end of someone's connection, and the process it
 * was picked for fails to bind it. Below the range only listeners compete, and a bind that collides
 * tries another port.
 */
const LISTENER_PORTS = listenerPortRange();

function listenerPortRange(): { low: number; high: number } | undefined {
  let ephemeralLow = 32_768;
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    if (Number.isInteger(Number(low))) ephemeralLow = Number(low);
  } catch {
    // Not Linux: the usual default.
  }
  const low = 10_000;
  const high = ephemeralLow - 1;
  return high - low >= 1_000 ? { low, high } : undefined;
}

function listenOn(port: number): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      if (typeof address === 'object' && address) resolve({ server, port: address.port });
      else reject(new Error('no port'));
    });
  });
}

async function listenOnAnyPort(): Promise<{ server: Server; port: number }> {
  if (!LISTENER_PORTS) return listenOn(0);
  const { low, high } = LISTENER_PORTS;
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    try {
      return await listenOn(port);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    }
  }
  return listenOn(0);
}

const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  const { server, port } = await listenOnAnyPort();
  await close(server);
  return port;
}

/**
 * `count` TCP ports on 127.0.0.1 that were free a moment ago, all different: each is held until every
 * one is picked (picked one after the other, the system may hand out a port just released again).
 * Free a moment ago is not free later: a caller that binds through another process retries on a
 * collision.
 */
export async function freePorts(count: number): Promise<number[]> {
  const held: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i += 1) {
      const { server, port } = await listenOnAnyPort();
      held.push(server);
      ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(held.map(close));
  }
}
