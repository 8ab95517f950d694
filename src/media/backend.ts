// What a back end of the media store (store.ts) does: objects under keys relative to the store's prefix.
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';

/** What the store holds of an object. */
export interface ObjectInfo {
  bytes: number;
  /** As written beside the object; null when none was (or for a file of the directory store's older layout). */
  contentType: string | null;
}

/** What a put is told of the object: its size and type, and its SHA-256 (hex) when the writer computed it. */
export interface PutInfo extends ObjectInfo {
  sha256?: string;
}

/** Bytes `start` to `end` of an object, both inclusive (HTTP Range's form). */
export interface ByteRange {
  start: number;
  end: number;
}

/** A back end: the objects under their keys (relative to the store's prefix). */
export interface ObjectBackend {
  /** The store as logs and /readyz name it, never with credentials: `directory /x`, `s3://bucket/prefix`. */
  readonly description: string;
  head(key: string): Promise<ObjectInfo | null>;
  /** The object's bytes (a range of them); null when there is no such object. */
  read(key: string, range?: ByteRange): Promise<Readable | null>;
  /** Puts the complete local file `file` under `key`, all at once for readers; `file` may be gone afterwards. */
  putFile(key: string, file: string, info: PutInfo): Promise<void>;
  /**
   * True when putFile moves the file itself into place (the directory's rename): a spooled file must be on
   * disk before it is put. Otherwise putFile copies it, and the spool is only a buffer.
   */
  readonly movesFiles: boolean;
  /**
   * Puts bytes held in memory under `key` unless the store holds an object under it already: false when it did,
   * and nothing was written. A back end without it gets a spooled file.
   */
  putBytes?(key: string, body: Buffer, info: PutInfo): Promise<boolean>;
  /** Removes the object (and what is kept beside it); nothing when there is none. */
  remove(key: string): Promise<void>;
  /** Removes every object whose key starts with `prefix`. */
  removePrefix(prefix: string): Promise<void>;
  /** The object as a file of this machine, when the back end keeps it as one. */
  localFile?(key: string): Promise<string | null>;
  /** Answers when the store can be read and written (the bucket exists and the credentials reach it). */
  ping(): Promise<void>;
  close(): void;
}

/** Reads a local file as a stream (a range of it): the directory back end's reads, and a spool's upload. */
export function fileStream(file: string, range?: ByteRange): Readable {
  return createReadStream(file, range ? { start: range.start, end: range.end } : {});
}
