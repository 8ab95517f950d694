// What every albumflow command shares: its errors and the HTTP client of a running albumflow.

import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig, type Config } from '../common/config.js';
import { adminTokenPath, readAdminToken } from '../http/access/admin-token.js';
import { defaultDataDir } from '../common/paths.js';
import { terminalJson, terminalText } from '../common/terminal.js';

/** Exit codes: 1 when albumflow refused or could not be reached, 2 for a command line it cannot run. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
  }
}

/** A file's bytes; a file that cannot be read is the command's error. */
export function readFile(file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

/** A command line albumflow cannot run: one line, with where the usage is. */
export const misuse = (message: string) => new CliError(`${message} (albumflow help)`, 2);

/**
 * The configuration read from the environment variables `names` as the server reads them, and from
 * nothing else of the environment (what a command does not use cannot stop it); a mistake is a CliError.
 */
export function cliConfig(names: readonly string[]): Config {
  try {
    return loadConfig(Object.fromEntries(names.map((name) => [name, process.env[name]])));
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
}

export type Api = ReturnType<typeof createApi>;

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

interface ApiCredential {
  token: string | undefined;
  /** Where the token came from, or where it was looked for. */
  source: string;
}

/** ALBUMFLOW_TOKEN, else the admin token the instance generated in its data directory. */
function apiCredential(): ApiCredential {
  if (process.env.ALBUMFLOW_TOKEN) return { token: process.env.ALBUMFLOW_TOKEN, source: 'ALBUMFLOW_TOKEN' };
  const file = adminTokenPath(path.resolve(process.env.DATA_DIR || defaultDataDir));
  try {
    return { token: readAdminToken(file), source: file };
  } catch (err) {
    throw new CliError((err as Error).message);
  }
}

/** Where API tokens come from: the environment, or the admin API at runtime. */
const tokenSources = "one of the server's API_TOKENS, or one made with `albumflow token create`";

/**
 * What to set when the server refused the token. A 403's own message says what the route needs (this
 * workspace, or every workspace: `*`); the hint says where such a token comes from.
 */
function accessHint(status: number, { token, source }: ApiCredential): string {
  if (token === undefined) return `Set ALBUMFLOW_TOKEN to an API token, ${tokenSources} (there is no ${source}).`;
  if (status === 401)
    return `The token from ${source} is not accepted (unknown, revoked or expired): set ALBUMFLOW_TOKEN to ${tokenSources}.`;
  return `The token from ${source} does not reach what this asks for: set ALBUMFLOW_TOKEN to one whose workspaces include it, ${tokenSources} (\`*\` for every workspace).`;
}

/** Requests to albumflow's HTTP API at `baseUrl`; a refusal or an unreachable server becomes a CliError. */
export function createApi(baseUrl: string) {
  async function request(method: Method, path: string, init: { body?: Buffer | string; headers?: Record<string, string> } = {}) {
    let response: Response;
    try {
      response = await fetch(`${baseUrl}${path}`, { method, body: init.body, headers: init.headers });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      throw new CliError(`cannot reach albumflow at ${baseUrl} (${cause}). Is it running? Start it with \`npm start\` or pass --url.`);
    }
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // a non-JSON body is shown as text
    }
    return { status: response.status, body };
  }

  function refusal(status: number, body: unknown): CliError {
    const error = (body as { error?: { code?: string; message?: string } } | null)?.error;
    // What the server said, on one line: it may echo what a sender wrote.
    return new CliError(
      error
        ? `${status} ${terminalText(String(error.code))}: ${terminalText(String(error.message))}`
        : `${status}: ${typeof body === 'string' ? terminalText(body) : terminalJson(body, 0)}`,
    );
  }

  let credential: ApiCredential | undefined;
  /** A request to the API (everything but the webhooks), with the caller's token; a refused token says what to set. */
  async function authorized(method: Method, path: string, init: Parameters<typeof request>[2] = {}) {
    credential ??= apiCredential();
    const headers = { ...init.headers, ...(credential.token ? { authorization: `Bearer ${credential.token}` } : {}) };
    const answer = await request(method, path, { ...init, headers });
    if (answer.status === 401 || answer.status === 403) {
      throw new CliError(`${refusal(answer.status, answer.body).message}. ${accessHint(answer.status, credential)}`);
    }
    return answer;
  }

  /** The body of a 2xx answer of the API; anything else is the error albumflow gave. */
  async function expect<T>(method: Method, path: string, init?: Parameters<typeof request>[2]): Promise<T> {
    const { status, body } = await authorized(method, path, init);
    if (status < 200 || status >= 300) throw refusal(status, body);
    return body as T;
  }

  return { request, authorized, expect, refusal };
}
