import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type LocalServer = { url: string; close(): Promise<void> };

/**
 * A stand-in's HTTP server on 127.0.0.1 at a port the system picks. `close()` cuts every open
 * connection first, a request the stand-in holds unanswered included, so closing never waits on one.
 */
export async function listenLocally(handle: RequestListener): Promise<LocalServer> {
  const sockets = new Set<Socket>();
  const server = createServer(handle);
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
