// The floor of the media-store phase's downloads, run as its own process by bench/phases/media-store.ts:
// a bare loop that fetches the files the worker downloaded from the same media server and puts each into
// a store of the same kind, DOWNLOAD_FLOOR_CONCURRENCY at a time over kept-alive connections. Per file:
// HTTP GET, SHA-256 and byte count of the body as it arrives, its size against Content-Length, then the
// store — the directory store's way (the body in one write to a partial file, flushed to disk, renamed under
// the hash, its type beside it) or one PutObject under the hash with the AWS SDK, signed and checked with the
// hash it has (the body held in memory: it is a photo). Nothing else:
// no database, no network guard, no retries, no records. It reads the URLs before it says it is ready,
// fetches them when told over IPC, and answers with the files and bytes it stored.
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export type FloorMessage = { type: 'run' };
export type FloorReply = { type: 'done'; files: number; bytes: number } | { type: 'error'; message: string };

export const downloadFloorReadyLine = 'download floor ready';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

interface Fetched {
  bytes: number;
  sha256: string;
  contentType: string | null;
}

/** One GET; the body hashed and counted as it arrives, handed chunk by chunk to `onChunk`. */
function fetchFile(agent: http.Agent, url: string, onChunk: (chunk: Buffer) => void): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { agent }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`${url}: HTTP ${response.statusCode}`));
        return;
      }
      const declared = Number(response.headers['content-length']);
      const hash = crypto.createHash('sha256');
      let bytes = 0;
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        hash.update(chunk);
        onChunk(chunk);
      });
      response.once('end', () => {
        if (Number.isFinite(declared) && declared !== bytes) reject(new Error(`${url}: ${bytes} bytes of ${declared}`));
        else resolve({ bytes, sha256: hash.digest('hex'), contentType: response.headers['content-type'] ?? null });
      });
      response.once('error', reject);
    });
    request.once('error', reject);
  });
}

type Store = (url: string, agent: http.Agent) => Promise<number>;

/** The directory store's way: the body in one write to a partial file, flushed, renamed under the hash; its type in a file beside it. */
function directoryStore(dir: string): Store {
  const spool = path.join(dir, '.tmp');
  fs.mkdirSync(spool, { recursive: true });
  return async (url, agent) => {
    const chunks: Buffer[] = [];
    const fetched = await fetchFile(agent, url, (chunk) => chunks.push(chunk));
    const partial = path.join(spool, crypto.randomBytes(8).toString('hex'));
    const handle = await fs.promises.open(partial, 'wx');
    await handle.writeFile(Buffer.concat(chunks, fetched.bytes));
    await handle.sync();
    await handle.close();
    const target = path.join(dir, 'sha256', fetched.sha256.slice(0, 2), fetched.sha256);
    await fs.promises.mkdir(path.dirname(target), { recursive: true });
    if (fetched.contentType !== null) {
      const typePartial = `${partial}.type`;
      await fs.promises.writeFile(typePartial, fetched.contentType);
      await fs.promises.rename(typePartial, `${target}.type`);
    }
    await fs.promises.rename(partial, target);
    return fetched.bytes;
  };
}

/** One PutObject under the hash, the body from memory. */
function s3Store(bucket: string, prefix: string): { store: Store; client: S3Client } {
  const client = new S3Client({ endpoint: required('AWS_ENDPOINT_URL_S3'), forcePathStyle: true });
  const store: Store = async (url, agent) => {
    const chunks: Buffer[] = [];
    const fetched = await fetchFile(agent, url, (chunk) => chunks.push(chunk));
    const key = `${prefix}/sha256/${fetched.sha256.slice(0, 2)}/${fetched.sha256}`;
    const put = new PutObjectCommand({
      Bucket: bucket,
      Key: key,
      Body: Buffer.concat(chunks, fetched.bytes),
      ContentLength: fetched.bytes,
      // The hash it has: the server checks the bytes against it, and the SDK neither computes a checksum nor hashes the body to sign it.
      ChecksumSHA256: Buffer.from(fetched.sha256, 'hex').toString('base64'),
      ...(fetched.contentType ? { ContentType: fetched.contentType } : {}),
    });
    put.middlewareStack.add(
      (next) => (args) => {
        (args.request as { headers: Record<string, string> }).headers['x-amz-content-sha256'] = fetched.sha256;
        return next(args);
      },
      { step: 'build' },
    );
    await client.send(put);
    return fetched.bytes;
  };
  return { store, client };
}

async function fetchAll(urls: readonly string[], store: Store, concurrency: number): Promise<{ files: number; bytes: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  let next = 0;
  let bytes = 0;
  const fetcher = async () => {
    while (next < urls.length) bytes += await store(urls[next++]!, agent);
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, fetcher));
  } finally {
    agent.destroy();
  }
  return { files: urls.length, bytes };
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (isMain && process.send) {
  const urls = JSON.parse(fs.readFileSync(required('DOWNLOAD_FLOOR_URLS'), 'utf8')) as string[];
  const concurrency = Number(required('DOWNLOAD_FLOOR_CONCURRENCY'));
  const bucket = process.env.DOWNLOAD_FLOOR_BUCKET;
  const s3 = bucket ? s3Store(bucket, required('DOWNLOAD_FLOOR_PREFIX')) : undefined;
  const store = s3?.store ?? directoryStore(required('DOWNLOAD_FLOOR_DIR'));
  const reply = (message: FloorReply) => process.send!(message);
  process.on('disconnect', () => process.exit(0));
  // An exit of its own, so that --cpu-prof writes the profile.
  process.once('SIGTERM', () => process.exit(0));
  process.on('message', (message: FloorMessage) => {
    if (message.type !== 'run') return;
    fetchAll(urls, store, concurrency).then(
      (done) => reply({ type: 'done', ...done }),
      (err: unknown) => reply({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
  process.stdout.write(`${downloadFloorReadyLine}\n`);
}
