// The media store: where every process reads and writes the downloaded files and their thumbnails,
// the directory MEDIA_DIR or an S3-compatible bucket (MEDIA_STORE). Objects are content-addressed:
// `<prefix>/sha256/<first two hex digits>/<sha256>`, their content type stored beside them, written
// once. A write hashes and counts its source on the way and puts it under its hash unless an object is
// there already: a small file announced by its size is put from memory in one write (within a budget of
// the store's); any other is streamed to a partial file of this process first, never held whole in memory.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { MediaConfig } from '../common/config.js';
import type { ByteRange, ObjectBackend, ObjectInfo } from './backend.js';
import { directoryBackend } from './directory.js';
import { s3Backend } from './s3.js';

/**
 * The store refused or did not answer: another attempt may succeed. Its message names no credential.
 * `refused` when the store answered that it will not do it (isRefusal): the same request is refused
 * again until someone changes the store's permissions or locks.
 */
export class MediaStoreError extends Error {
  override name = 'MediaStoreError';
  constructor(
    message: string,
    readonly refused = false,
  ) {
    super(message);
  }
}

/** The source sent more than the size limit allows. */
export class MediaTooLargeError extends Error {
  override name = 'MediaTooLargeError';
  constructor(readonly maxBytes: number) {
    super(`the file is larger than MEDIA_MAX_BYTES (${maxBytes} bytes)`);
  }
}

export type { ByteRange, ObjectInfo } from './backend.js';

export const mediaKey = (sha256: string): string => `sha256/${sha256.slice(0, 2)}/${sha256}`;
export const thumbnailKey = (sha256: string, variant: string): string => `${thumbnailPrefix(sha256)}${variant}.webp`;
/** Every thumbnail of a file starts with it. */
const thumbnailPrefix = (sha256: string): string => `thumbnails/${sha256.slice(0, 2)}/${sha256}-`;

export interface WriteOptions {
  maxBytes: number;
  contentType: string | null;
  /** The size the source announced, when it did: over `maxBytes` refuses the file before reading it. */
  declaredBytes?: number | null;
  /** The partial file's name starts with it (removeAbandoned finds a crashed attempt's by it). */
  spoolPrefix?: string;
  /** After each chunk the source sent. */
  onChunk?: () => void;
}

export interface StoredMedia {
  sha256: string;
  bytes: number;
  /** False when the object was in the store already and was not uploaded again. */
  uploaded: boolean;
}

export interface MediaStore {
  readonly description: string;
  /** Streams `source` into the store under its SHA-256; resolves once the store confirmed the object. */
  write(source: Readable, options: WriteOptions): Promise<StoredMedia>;
  /** A downloaded file's size and type; null when the store does not hold it. */
  stat(sha256: string): Promise<ObjectInfo | null>;
  /** Any object by its key (mediaKey, thumbnailKey). */
  head(key: string): Promise<ObjectInfo | null>;
  read(key: string, range?: ByteRange): Promise<Readable | null>;
  /** A new partial file's path in this process's spool (removed by whoever asked for it). */
  tempFile(prefix: string): Promise<string>;
  /** Puts a complete local file of the spool under `key` (a thumbnail); the file is consumed. */
  putFile(key: string, file: string, contentType: string): Promise<void>;
  /** Runs `use` with the object as a local file (the store's own, or a copy removed afterwards); null when absent. */
  withLocalFile<T>(key: string, use: (file: string) => Promise<T>): Promise<T | null>;
  /** Removes a downloaded file and its thumbnails; resolves to the bytes the file held, null when it was not there. */
  remove(sha256: string): Promise<number | null>;
  /** Removes this process's partial files starting with `prefix` older than `olderThanMs` (an attempt that crashed). */
  removeAbandoned(prefix: string, olderThanMs: number): Promise<void>;
  ping(): Promise<void>;
  close(): void;
}

/** Wraps a back end's failure so that callers can tell the store's failures from the source's. */
async function guarded<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof MediaStoreError) throw err;
    throw new MediaStoreError(`the media store could not ${what}: ${describeError(err)}`, isRefusal(err));
  }
}

/** HTTP answers of a store that are not refusals: not found, a timeout, a conflict with another request, throttling. */
const passingStatuses = new Set([404, 408, 409, 429]);

/**
 * Whether a back end's failure is the store refusing (it answered, and will answer the same again): S3's
 * 4xx answers (403 AccessDenied for a missing permission or an object lock, 400 InvalidRequest, 405),
 * or a directory the process may not change (EACCES, EPERM, EROFS). Not answering, a 5xx, throttling
 * (429, 503 SlowDown) and a timeout are not: the store may answer in a moment.
 */
export function isRefusal(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return true;
  const status = (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
  return status !== undefined && status >= 400 && status < 500 && !passingStatuses.has(status);
}

function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as NodeJS.ErrnoException).code;
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const detail = [code, status === undefined ? undefined : `HTTP ${status}`].filter(Boolean).join(', ');
  const message = err.message || err.name;
  return detail && !message.includes(detail) ? `${message} (${detail})` : message;
}

/** A file announced at most this large is held in memory on its way to the back end. */
export const inMemoryFileBytes = 4 * 1024 * 1024;
/** A spooled file is written this many bytes at a time (its chunks gathered into one write). */
const spoolWriteBytes = 256 * 1024;
/** What the files held in memory at once take together at most, per store; a file past it is spooled. */
export const inMemoryBudgetBytes = 32 * 1024 * 1024;

/** Hashes and counts each chunk of `source`, refusing it past `maxBytes`, and hands the chunk on. */
async function consume(source: Readable, options: WriteOptions, onChunk: (chunk: Buffer) => Promise<void> | void) {
  const { maxBytes } = options;
  const hash = crypto.createHash('sha256');
  let bytes = 0;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > maxBytes) throw new MediaTooLargeError(maxBytes);
      hash.update(chunk);
      await onChunk(chunk);
      options.onChunk?.();
    }
  } finally {
    source.destroy();
  }
  return { sha256: hash.digest('hex'), bytes };
}

/** The store over a back end, its partial files under `spoolDir`. */
export function mediaStoreOver(backend: ObjectBackend, spoolDir: string): MediaStore {
  const spool = async (prefix: string) => {
    await fs.mkdir(spoolDir, { recursive: true });
    return path.join(spoolDir, `${prefix}${crypto.randomBytes(8).toString('hex')}.part`);
  };
  let inMemoryBytes = 0;

  /** Puts a spooled object under its hash unless the store holds it already (asked first: a large file is not sent for nothing). */
  async function putOnce(sha256: string, bytes: number, put: (key: string) => Promise<void>): Promise<StoredMedia> {
    const key = mediaKey(sha256);
    const present = await guarded('look up an object', () => backend.head(key));
    if (present) return { sha256, bytes, uploaded: false };
    await guarded('store an object', () => put(key));
    return { sha256, bytes, uploaded: true };
  }

  /** A file of `declared` bytes, held in memory while it arrives, then put from there. */
  async function writeFromMemory(source: Readable, declared: number, options: WriteOptions): Promise<StoredMedia> {
    const chunks: Buffer[] = [];
    let held = 0;
    const { sha256, bytes } = await consume(source, options, (chunk) => {
      held += chunk.length;
      // Past what it announced, the source is not the file it said (HTTP itself stops a body at its length).
      if (held > declared) throw new Error(`the source sent more than the ${declared} bytes it announced`);
      chunks.push(chunk);
    });
    const body = Buffer.concat(chunks, bytes);
    const uploaded = await guarded('store an object', () =>
      backend.putBytes!(mediaKey(sha256), body, { bytes, contentType: options.contentType, sha256 }),
    );
    return { sha256, bytes, uploaded };
  }

  /** A file streamed to a partial file of the spool (on disk first when the back end moves it into place), then put. */
  async function writeThroughSpool(source: Readable, options: WriteOptions): Promise<StoredMedia> {
    const file = await spool(options.spoolPrefix ?? '');
    try {
      const handle = await fs.open(file, 'wx');
      let hashed: { sha256: string; bytes: number };
      try {
        let gathered: Buffer[] = [];
        let gatheredBytes = 0;
        const flush = async () => {
          const chunks = gathered;
          gathered = [];
          gatheredBytes = 0;
          if (chunks.length > 0) await handle.writev(chunks);
        };
        hashed = await consume(source, options, async (chunk) => {
          gathered.push(chunk);
          gatheredBytes += chunk.length;
          if (gatheredBytes >= spoolWriteBytes) await flush();
        });
        await flush();
        if (backend.movesFiles) await handle.sync();
      } finally {
        await handle.close();
      }
      const { sha256, bytes } = hashed;
      return await putOnce(sha256, bytes, (key) => backend.putFile(key, file, { bytes, contentType: options.contentType, sha256 }));
    } finally {
      await fs.rm(file, { force: true });
    }
  }

  const store: MediaStore = {
    description: backend.description,

    async write(source, options) {
      const declared = options.declaredBytes ?? null;
      if (declared !== null && declared > options.maxBytes) {
        source.destroy();
        throw new MediaTooLargeError(options.maxBytes);
      }
      const inMemory =
        backend.putBytes !== undefined &&
        declared !== null &&
        declared <= inMemoryFileBytes &&
        inMemoryBytes + declared <= inMemoryBudgetBytes;
      if (!inMemory) return writeThroughSpool(source, options);
      inMemoryBytes += declared;
      try {
        return await writeFromMemory(source, declared, options);
      } finally {
        inMemoryBytes -= declared;
      }
    },

    tempFile: spool,
    stat: (sha256) => guarded('look up an object', () => backend.head(mediaKey(sha256))),
    head: (key) => guarded('look up an object', () => backend.head(key)),
    read: (key, range) => guarded('read an object', () => backend.read(key, range)),

    async putFile(key, file, contentType) {
      try {
        const { size } = await fs.stat(file);
        await guarded('store an object', () => backend.putFile(key, file, { bytes: size, contentType }));
      } finally {
        await fs.rm(file, { force: true });
      }
    },

    async withLocalFile(key, use) {
      const own = backend.localFile ? await guarded('look up an object', () => backend.localFile!(key)) : undefined;
      if (own !== undefined) return own === null ? null : use(own);
      const body = await store.read(key);
      if (!body) return null;
      const copy = await spool('copy-');
      try {
        await guarded('read an object', () => fs.writeFile(copy, body, { flag: 'wx' }));
        return await use(copy);
      } finally {
        await fs.rm(copy, { force: true });
      }
    },

    async remove(sha256) {
      const info = await store.stat(sha256);
      await guarded('remove an object', () => backend.removePrefix(thumbnailPrefix(sha256)));
      await guarded('remove an object', () => backend.remove(mediaKey(sha256)));
      return info?.bytes ?? null;
    },

    async removeAbandoned(prefix, olderThanMs) {
      const cutoff = Date.now() - olderThanMs;
      const names = (await fs.readdir(spoolDir).catch(() => [] as string[])).filter((name) => name.startsWith(prefix));
      await Promise.all(
        names.map(async (name) => {
          const file = path.join(spoolDir, name);
          const stat = await fs.stat(file).catch(() => undefined);
          if (stat && stat.mtimeMs < cutoff) await fs.rm(file, { force: true });
        }),
      );
    },

    ping: () => guarded('be reached', () => backend.ping()),
    close: () => backend.close(),
  };
  return store;
}

/** The store the configuration names: the bucket of MEDIA_STORE, else the directory MEDIA_DIR. */
export function openMediaStore(config: Pick<MediaConfig, 'dir' | 'store'>, env: NodeJS.ProcessEnv = process.env): MediaStore {
  const spoolDir = path.join(config.dir, '.tmp');
  const backend = config.store ? s3Backend(config.store, env) : directoryBackend(config.dir);
  return mediaStoreOver(backend, spoolDir);
}
