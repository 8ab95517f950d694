import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts `server` listening (port 0: any free one) and resolves with the port it got; rejects when it cannot listen. */
export async function listen(server: Server, port = 0, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}
