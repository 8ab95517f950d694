// The bench's media server, run as its own process by the bench: the harness's media server
// (test/harness/servers/media.ts) serving the catalogue's real images and clips as a platform's file CDN
// would, with a time to first byte and a throughput per response.
// Reads PORT, HOST, MEDIA_SEED, MEDIA_FIRST_BYTE_MS and MEDIA_MB_PER_S.
import { catalogue, startMediaServer } from '../../test/harness/servers/media.js';

function setting(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`);
  return value;
}

const megabytesPerSecond = setting('MEDIA_MB_PER_S', 25);
if (megabytesPerSecond === 0) throw new Error('MEDIA_MB_PER_S must be above 0');
const files = await catalogue({ seed: setting('MEDIA_SEED', 1), firstByteMs: setting('MEDIA_FIRST_BYTE_MS', 60), megabytesPerSecond });
const server = await startMediaServer({
  host: process.env.HOST ?? '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  fallback: files,
  logFetches: false,
  keepAliveTimeoutMs: 30_000,
});
process.stdout.write(`media server listening on ${server.baseUrl}\n`);

const shutdown = () => void server.close().then(() => process.exit(0));
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
