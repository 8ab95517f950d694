// The build information the Go linker writes into every binary it links (Go 1.18 and later), read without
// Go: the Go version and the modules, with their versions, that `go version -m` prints. A binary built with
// `go install module@version` carries no version of its own unless its release build sets one with
// -ldflags, but its main module's version is always here.
import fs from 'node:fs';

/** The blob's start, on a 16-byte boundary of the file (debug/buildinfo's buildInfoMagic). */
const magic = Buffer.from('\xff Go buildinf:', 'latin1');
const headerSize = 32;
const alignment = 16;
/** The header's flags byte: strings inline after the header rather than behind pointers (Go ≥ 1.18). */
const flagsOffset = 15;
const versionInline = 0x2;
/** The module information is framed by two 16-byte sentinels (cmd/go's infoStart and infoEnd). */
const sentinelLength = 16;

export interface GoModule {
  path: string;
  version: string;
}

export interface GoBuildInfo {
  /** The Go toolchain that built the binary, such as `go1.26.8`. */
  goVersion: string;
  /** The package of the main function. */
  path: string;
  /** The main module; `(devel)` when built from a working copy rather than a version. */
  main: GoModule | null;
  /** Every other module linked in, by path: the version in effect (a replacement's, when one is given). */
  deps: Record<string, string>;
  /** The `build` lines: flags, GOOS, vcs.revision, … */
  settings: Record<string, string>;
}

function uvarint(data: Buffer, offset: number): { value: number; next: number } | null {
  let value = 0;
  for (let i = 0, shift = 1; i < 10 && offset + i < data.length; i++, shift *= 128) {
    const byte = data[offset + i]!;
    value += (byte & 0x7f) * shift;
    if (byte < 0x80) return { value, next: offset + i + 1 };
  }
  return null;
}

function lengthPrefixed(data: Buffer, offset: number): { text: string; next: number } | null {
  const length = uvarint(data, offset);
  if (length === null || length.next + length.value > data.length) return null;
  return { text: data.toString('utf8', length.next, length.next + length.value), next: length.next + length.value };
}

/** The module information's lines (`path`, `mod`, `dep`, `=>`, `build`, tab-separated) as a record. */
export function parseModuleInfo(goVersion: string, text: string): GoBuildInfo {
  const info: GoBuildInfo = { goVersion, path: '', main: null, deps: {}, settings: {} };
  let last: GoModule | null = null;
  for (const line of text.split('\n')) {
    const [kind, ...fields] = line.split('\t');
    if (kind === 'path') info.path = fields[0] ?? '';
    else if (kind === 'mod' || kind === 'dep') {
      last = { path: fields[0] ?? '', version: fields[1] ?? '' };
      if (kind === 'mod') info.main = last;
      else info.deps[last.path] = last.version;
    } else if (kind === '=>' && last) {
      last.version = fields[1] ?? '';
      if (last !== info.main) info.deps[last.path] = last.version;
    } else if (kind === 'build') {
      const setting = fields.join('\t');
      const equals = setting.indexOf('=');
      if (equals > 0) info.settings[setting.slice(0, equals)] = setting.slice(equals + 1);
    }
  }
  return info;
}

/** The build information of a blob that starts with the header; null when it is not one (or predates Go 1.18). */
export function decodeBuildInfo(blob: Buffer): GoBuildInfo | null {
  if (blob.length < headerSize || !blob.subarray(0, magic.length).equals(magic)) return null;
  if ((blob[flagsOffset]! & versionInline) === 0) return null;
  const version = lengthPrefixed(blob, headerSize);
  if (version === null || !version.text.startsWith('go')) return null;
  const modules = lengthPrefixed(blob, version.next);
  if (modules === null) return null;
  const framed = modules.text;
  const hasFrame = framed.length >= 2 * sentinelLength + 1 && framed[framed.length - sentinelLength - 1] === '\n';
  return parseModuleInfo(version.text, hasFrame ? framed.slice(sentinelLength, -sentinelLength) : '');
}

/**
 * Reads the build information of a Go binary: the header is found where the linker aligns it, so the
 * file's format (ELF, Mach-O, PE) does not matter. Null when the file holds none.
 */
export async function readGoBuildInfo(file: string, chunkSize = 1 << 20): Promise<GoBuildInfo | null> {
  if (chunkSize % alignment !== 0) throw new Error(`chunkSize must be a multiple of ${alignment}`);
  const handle = await fs.promises.open(file, 'r');
  try {
    const { size } = await handle.stat();
    const chunk = Buffer.alloc(chunkSize);
    for (let position = 0; ; position += chunkSize) {
      const { bytesRead } = await handle.read(chunk, 0, chunkSize, position);
      if (bytesRead === 0) return null;
      const data = chunk.subarray(0, bytesRead);
      for (let at = data.indexOf(magic); at >= 0; at = data.indexOf(magic, at + 1)) {
        if (at % alignment !== 0) continue;
        // The header and the two strings after it: tens of kilobytes at most, for hundreds of modules.
        const blob = Buffer.alloc(Math.min(size - (position + at), 1 << 20));
        await handle.read(blob, 0, blob.length, position + at);
        const info = decodeBuildInfo(blob);
        if (info) return info;
      }
    }
  } finally {
    await handle.close();
  }
}
