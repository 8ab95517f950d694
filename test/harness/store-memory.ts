// Run as a process of its own by test/integration/media-store.test.ts:
//   node --expose-gc --import tsx test/harness/store-memory.ts <MEDIA_DIR> <MEDIA_STORE or ""> <files> <MiB each>
// streams that many files of random bytes into the media store at once (the AWS SDK's variables from the
// environment) and prints, as one JSON line, their hashes and the process's resident memory before and at
// its peak (VmHWM, reset first, so no sample can miss it).
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { parseMediaStore } from '../../src/common/config.js';
import { openMediaStore } from '../../src/media/store.js';

export interface StoreMemoryReport {
  /** Each file: the hash the store answered, and the hash of what was sent. */
  files: Array<{ stored: string; sent: string }>;
  baselineRss: number;
  peakRss: number;
}

function status(field: 'VmRSS' | 'VmHWM'): number {
  const kib = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1];
  if (kib === undefined) throw new Error(`no ${field} in /proc/self/status`);
  return Number(kib) * 1024;
}

/** `total` random bytes, made 64 KiB at a time as they are read (never all in memory), and their hash. */
function randomSource(total: number): { source: Readable; digest: () => string } {
  const hash = crypto.createHash('sha256');
  let sent = 0;
  const source = new Readable({
    read() {
      if (sent >= total) return void this.push(null);
      const chunk = crypto.randomBytes(Math.min(64 * 1024, total - sent));
      sent += chunk.length;
      hash.update(chunk);
      this.push(chunk);
    },
  });
  return { source, digest: () => hash.digest('hex') };
}

const [dir, location, count, mib] = process.argv.slice(2);
if (!dir || location === undefined || !count || !mib)
  throw new Error('usage: store-memory.ts <MEDIA_DIR> <MEDIA_STORE or ""> <files> <MiB>');
const store = openMediaStore({ dir, store: location ? parseMediaStore(location) : undefined });
await store.ping();
const total = Number(mib) * 1024 * 1024;
(globalThis as { gc?: () => void }).gc?.();
fs.writeFileSync('/proc/self/clear_refs', '5');
const baselineRss = status('VmRSS');
const files = await Promise.all(
  Array.from({ length: Number(count) }, async () => {
    const { source, digest } = randomSource(total);
    const { sha256 } = await store.write(source, { maxBytes: total, contentType: 'video/mp4' });
    return { stored: sha256, sent: digest() };
  }),
);
const report: StoreMemoryReport = { files, baselineRss, peakRss: status('VmHWM') };
store.close();
process.stdout.write(`${JSON.stringify(report)}\n`);
