import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../common/config.js';
import type { Logger } from '../../common/log.js';
import { bearerTokenPattern } from '../../common/bearer-token.js';

/** The file under DATA_DIR that holds the admin token generated when API_TOKENS is unset. */
export function adminTokenPath(dataDir: string): string {
  return path.join(dataDir, 'admin-token');
}

export class AdminTokenError extends Error {
  override name = 'AdminTokenError';
}

/** The token in the file, or undefined when there is no file. */
export function readAdminToken(file: string): string | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new AdminTokenError(`cannot read the admin token in ${file}: ${(err as Error).message}`);
  }
  const token = text.trim();
  if (!bearerTokenPattern.test(token)) {
    throw new AdminTokenError(`${file} holds no valid token; delete it and albumflow generates a new one at its next start`);
  }
  return token;
}

export interface AdminToken {
  token: string;
  file: string;
  /** True when this call wrote the file. */
  created: boolean;
  /** Set when the file may be read by other users than its owner. */
  warning?: string;
}

/**
 * The admin token of this data directory: read from its file, or generated into it. The file is
 * written whole under a temporary name with mode 0600 and then linked into place, which fails if
 * another process was first, so it is never seen half-written and never overwritten.
 */
export function loadOrCreateAdminToken(dataDir: string): AdminToken {
  const file = adminTokenPath(dataDir);
  const existing = readAdminToken(file);
  if (existing !== undefined) return { token: existing, file, created: false, ...permissionWarning(file) };

  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const generated = crypto.randomBytes(32).toString('base64url');
  const temporary = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  const fd = fs.openSync(temporary, 'wx', 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    fs.writeFileSync(fd, `${generated}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.linkSync(temporary, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(temporary, { force: true });
  }
  const token = readAdminToken(file);
  if (token === undefined) throw new AdminTokenError(`${file} disappeared while it was being created`);
  return { token, file, created: token === generated };
}

function permissionWarning(file: string): { warning?: string } {
  const mode = fs.statSync(file).mode & 0o777;
  if ((mode & 0o077) === 0) return {};
  return { warning: `${file} may be read by other users (mode ${mode.toString(8)}); run chmod 600 on it` };
}

export interface ApiTokens {
  tokens: ReadonlyMap<string, readonly string[]>;
  /** Set when API_TOKENS is unset: the generated admin token, which reaches every workspace. */
  adminToken?: string;
}

/** API_TOKENS, or else the admin token of DATA_DIR (generated at the first start). */
export function resolveApiTokens(config: Pick<Config, 'apiTokens' | 'dataDir'>, logger: Logger): ApiTokens {
  if (config.apiTokens) {
    if (config.apiTokens.size === 0)
      logger.warn('API_TOKENS holds no token: the status API, the console and /metrics refuse every request');
    return { tokens: config.apiTokens };
  }
  const admin = loadOrCreateAdminToken(config.dataDir);
  logger.info(
    { file: admin.file },
    admin.created ? 'API_TOKENS is unset: generated an admin token' : 'API_TOKENS is unset: using the admin token',
  );
  if (admin.warning) logger.warn(admin.warning);
  return { tokens: new Map([[admin.token, ['*']]]), adminToken: admin.token };
}
