import net from 'node:net';

export type FaultProxy = {
  /** `host:port` to give a client in place of the target's. */
  address: string;
  state: {
    /** While true, requests still reach the target but its answers are dropped. */
    dropAnswers: boolean;
    /** Bytes sent on to the target while answers were dropped (the request did get through). */
    forwardedWhileDropping: number;
  };
  /** Cuts every connection (a dropped answer leaves HTTP/2 state that cannot be resumed). */
  cutConnections(): void;
  close(): Promise<void>;
};

/**
 * A real local TCP proxy to `target` (`host:port`, e.g. the Temporal frontend) whose answers can be
 * dropped while requests still go through: a call the target made durable whose answer never comes
 * back, as a lost network reply looks to the caller.
 */
export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const split = target.lastIndexOf(':');
  const [host, port] = [target.slice(0, split), Number(target.slice(split + 1))];
  const sockets = new Set<net.Socket>();
  const state = { dropAnswers: false, forwardedWhileDropping: 0 };
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host);
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => {
      if (state.dropAnswers) state.forwardedWhileDropping += chunk.length;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!state.dropAnswers) client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    state,
    cutConnections() {
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
