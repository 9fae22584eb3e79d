import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Connections a client opened but never sent a request on (HTTP clients open spare
 * keep-alive connections): Node's server.close() waits for them until its header timeout,
 * which would hold a graceful shutdown for a minute. Returns a function that closes them,
 * together with Node's idle keep-alive connections.
 */
export function trackUnusedConnections(server: Server): () => void {
  const unused = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  server.on('request', (req: { socket: Socket }) => {
    unused.delete(req.socket);
  });
  return () => {
    for (const socket of unused) socket.destroy();
    unused.clear();
    server.closeIdleConnections();
  };
}
