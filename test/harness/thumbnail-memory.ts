// Run as a process of its own by test/integration/console-thumbnails.test.ts:
//   node --expose-gc --import tsx test/harness/thumbnail-memory.ts <MEDIA_DIR> <sha256>…
// asks one thumbnailer for the thumbnails of every file at once and prints, as one JSON line, what
// each got and the process's resident memory before and at its peak (VmHWM, reset first, so no
// sample can miss it).
import fs from 'node:fs';
import { pino } from 'pino';
import sharp from 'sharp';
import { openMediaStore } from '../../src/media/store.js';
import { createThumbnailer } from '../../src/ui/thumbnails.js';

export interface ThumbnailMemoryReport {
  /** What each file got, in the order given: `file` (a thumbnail in the store), or the icon's name. */
  results: string[];
  /** VmRSS once the thumbnailer was ready, bytes. */
  baselineRss: number;
  /** VmHWM after the thumbnails were made, bytes. */
  peakRss: number;
  /** The most renders sharp ran at once. */
  peakRenders: number;
}

function status(field: 'VmRSS' | 'VmHWM'): number {
  const kib = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1];
  if (kib === undefined) throw new Error(`no ${field} in /proc/self/status`);
  return Number(kib) * 1024;
}

const [mediaDir, ...hashes] = process.argv.slice(2);
if (!mediaDir || hashes.length === 0) throw new Error('usage: thumbnail-memory.ts <MEDIA_DIR> <sha256>…');
const thumbnailer = createThumbnailer(openMediaStore({ dir: mediaDir, store: undefined }), pino({ level: 'silent' }));
(globalThis as { gc?: () => void }).gc?.();
// Writing 5 to clear_refs resets VmHWM to the current resident size (Linux).
fs.writeFileSync('/proc/self/clear_refs', '5');
const baselineRss = status('VmRSS');
let peakRenders = 0;
const sampler = setInterval(() => (peakRenders = Math.max(peakRenders, sharp.counters().process)), 5);
const thumbnails = await Promise.all(hashes.map((sha256) => thumbnailer.thumbnail(sha256)));
clearInterval(sampler);
const report: ThumbnailMemoryReport = {
  results: thumbnails.map((thumbnail) => (thumbnail === null ? 'missing' : 'key' in thumbnail ? 'file' : thumbnail.icon)),
  baselineRss,
  peakRss: status('VmHWM'),
  peakRenders,
};
process.stdout.write(`${JSON.stringify(report)}\n`);
