// The directory back end (MEDIA_DIR, the default): each object a file under its key, its content type
// in a file beside it (`<key>.type`). A file is renamed into place complete, so a reader never sees
// part of one. Files of the layout before the store (`<MEDIA_DIR>/<2 hex>/<sha256>`) are found
// where they are.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileStream, type ObjectBackend, type ObjectInfo } from './backend.js';

/** `sha256/ab/<hash>` was `ab/<hash>` before the media store: the same file, found there. */
function legacyPath(dir: string, key: string): string | undefined {
  const match = /^sha256\/([0-9a-f]{2})\/([0-9a-f]{64})$/.exec(key);
  return match ? path.join(dir, match[1]!, match[2]!) : undefined;
}

async function fileSize(file: string): Promise<number | null> {
  try {
    const stat = await fs.stat(file);
    return stat.isFile() ? stat.size : null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw err;
  }
}

/** A partial file beside `target`, renamed onto it once complete. */
const partialBeside = (target: string) => `${target}.${crypto.randomBytes(6).toString('hex')}.part`;

export function directoryBackend(dir: string): ObjectBackend {
  const fileOf = (key: string) => path.join(dir, ...key.split('/'));

  /** Makes the object's folder and writes its type beside it (first: once the object is in place, what is beside it is complete); answers the object's path. */
  async function placeType(key: string, info: ObjectInfo): Promise<string> {
    const target = fileOf(key);
    await fs.mkdir(path.dirname(target), { recursive: true });
    if (info.contentType !== null) {
      const typeFile = `${target}.type`;
      const partial = partialBeside(typeFile);
      await fs.writeFile(partial, info.contentType);
      await fs.rename(partial, typeFile);
    }
    return target;
  }

  /** The file holding `key`: its own path, or the older layout's. */
  async function locate(key: string): Promise<{ file: string; bytes: number } | null> {
    for (const file of [fileOf(key), legacyPath(dir, key)]) {
      if (file === undefined) continue;
      const bytes = await fileSize(file);
      if (bytes !== null) return { file, bytes };
    }
    return null;
  }

  async function contentTypeOf(file: string): Promise<string | null> {
    try {
      return (await fs.readFile(`${file}.type`, 'utf8')).trim() || null;
    } catch {
      return null;
    }
  }

  return {
    description: `directory ${dir}`,

    async head(key): Promise<ObjectInfo | null> {
      const found = await locate(key);
      return found ? { bytes: found.bytes, contentType: await contentTypeOf(found.file) } : null;
    },

    async read(key, range) {
      const found = await locate(key);
      return found ? fileStream(found.file, range) : null;
    },

    movesFiles: true,

    async putFile(key, file, info) {
      const target = await placeType(key, info);
      // The spool is under MEDIA_DIR: the same file system, so the rename is atomic.
      await fs.rename(file, target);
    },

    async putBytes(key, body, info) {
      if (await locate(key)) return false;
      const target = await placeType(key, info);
      const partial = partialBeside(target);
      try {
        const handle = await fs.open(partial, 'wx');
        try {
          await handle.writeFile(body);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await fs.rename(partial, target);
      } finally {
        await fs.rm(partial, { force: true });
      }
      return true;
    },

    async remove(key) {
      for (const file of [fileOf(key), legacyPath(dir, key)]) {
        if (file === undefined) continue;
        await fs.rm(file, { force: true });
        await fs.rm(`${file}.type`, { force: true });
      }
    },

    async removePrefix(prefix) {
      const start = fileOf(prefix);
      const folder = path.dirname(start);
      const names = await fs.readdir(folder).catch(() => [] as string[]);
      const base = path.basename(start);
      await Promise.all(names.filter((name) => name.startsWith(base)).map((name) => fs.rm(path.join(folder, name), { force: true })));
    },

    async localFile(key) {
      return (await locate(key))?.file ?? null;
    },

    async ping() {
      await fs.mkdir(dir, { recursive: true });
      await fs.access(dir, fs.constants.R_OK | fs.constants.W_OK);
    },

    close() {},
  };
}
