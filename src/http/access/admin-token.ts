import crypto from 'node:crypto';
import path from 'node:path';
import type { Config } from '../../common/config.js';
import type { Logger } from '../../common/log.js';
import { bearerTokenPattern } from '../../common/bearer-token.js';
import { createPrivateFileOnce, permissionWarning, readPrivateFile } from '../../common/private-file.js';

/** The file under DATA_DIR that holds the admin token generated when API_TOKENS is unset. */
export function adminTokenPath(dataDir: string): string {
  return path.join(dataDir, 'admin-token');
}

export class AdminTokenError extends Error {
  override name = 'AdminTokenError';
}

/** The token in the file, or undefined when there is no file. */
export function readAdminToken(file: string): string | undefined {
  const text = readPrivateFile(file, (reason) => new AdminTokenError(`cannot read the admin token in ${file}: ${reason}`));
  if (text === undefined) return undefined;
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
 * The admin token of this data directory: read from its file, or generated into it (mode 0600, never
 * half-written, never overwritten: `createPrivateFileOnce`).
 */
export function loadOrCreateAdminToken(dataDir: string): AdminToken {
  const file = adminTokenPath(dataDir);
  const existing = readAdminToken(file);
  if (existing !== undefined) return { token: existing, file, created: false, ...permissionWarning(file) };

  const generated = crypto.randomBytes(32).toString('base64url');
  createPrivateFileOnce(file, `${generated}\n`);
  const token = readAdminToken(file);
  if (token === undefined) throw new AdminTokenError(`${file} disappeared while it was being created`);
  return { token, file, created: token === generated };
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
