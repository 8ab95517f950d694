import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';

/** Where the OS starts handing out ports for `listen(0)` (IANA's range where /proc does not say). */
function ephemeralRangeStart(): number {
  try {
    const first = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(first) && first > 2048) return first;
  } catch {
    // not Linux
  }
  return 49152;
}

/**
 * A free port for a server that albumflow starts as a child process and may restart on the same port.
 * It is drawn below the range the OS hands out for port 0, so nothing that asks the OS for any free port
 * (a test's HTTP server, a gRPC client, the Temporal dev server's internal services) can be given it,
 * not even while our server is down between two runs. `below` bounds it further.
 */
export async function pickPort(host = '127.0.0.1', below = 65_536): Promise<number> {
  const end = Math.min(ephemeralRangeStart(), below);
  const start = Math.min(10_000, Math.floor(end / 2));
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const port = crypto.randomInt(start, end);
    if (await isFree(host, port)) return port;
  }
  throw new Error(`no free port on ${host} between ${start} and ${end}`);
}

export async function isFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(false) : reject(err)));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** How PostgreSQL, Go servers and Node say that a port is taken. */
export function saysAddressInUse(output: string): boolean {
  return /address already in use|EADDRINUSE/i.test(output);
}
