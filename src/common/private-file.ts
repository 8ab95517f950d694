import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Writes `content` to `file` unless the file exists: whole, under a temporary name with mode 0600, then
 * linked into place, which fails if another process was first, so the file is never seen half-written
 * and never overwritten. The directory is created (mode 0700) when missing.
 */
export function createPrivateFileOnce(file: string, content: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  writePrivateFile(temporary, content);
  try {
    fs.linkSync(temporary, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(temporary, { force: true });
  }
}

/** The text of `file`, or undefined when there is none; any other failure is thrown as `fail(reason)` makes it. */
export function readPrivateFile(file: string, fail: (reason: string) => Error): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fail((err as Error).message);
  }
}

/** Replaces `file` with `content` at once (a rename), mode 0600. */
export function replacePrivateFile(file: string, content: string): void {
  const temporary = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  writePrivateFile(temporary, content);
  fs.renameSync(temporary, file);
}

function writePrivateFile(file: string, content: string): void {
  const fd = fs.openSync(file, 'wx', 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    fs.writeFileSync(fd, content);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** A warning when `file` may be read by other users than its owner. */
export function permissionWarning(file: string): { warning?: string } {
  const mode = fs.statSync(file).mode & 0o777;
  if ((mode & 0o077) === 0) return {};
  return { warning: `${file} may be read by other users (mode ${mode.toString(8)}); run chmod 600 on it` };
}
