import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { albumWorkflowId } from '../../workflows/keys.js';
import type { AlbumKey, AlbumStatus } from '../../workflows/types.js';
import { adminTokenPath, readAdminToken } from '../http/access/admin-token.js';
import { defaultDataDir } from '../paths.js';
import { signatureHeader } from '../signature.js';
import { formatAlbum, formatAlbumList, formatMessage, type AlbumListBody } from './format.js';

const usage = `albumflow — inspect albums and send sample webhooks to a running albumflow

Usage:
  albumflow status  <workspace> <provider> <account> <conversation> <album>    [--json]
  albumflow message <workspace> <provider> <account> <conversation> <message>  [--json]
  albumflow list    <workspace> [--review] [--state collecting|processed|closed] [--limit N] [--cursor C] [--json]
  albumflow send    <event.json> [--workspace demo] [--secret S]
  albumflow history <workspace> <provider> <account> <conversation> <album>

Options:
  --url URL      albumflow's HTTP address (ALBUMFLOW_URL, default http://127.0.0.1:3000)
  --secret S     signing secret for send (ALBUMFLOW_SECRET, else the workspace's first secret in WORKSPACE_SECRETS)
  --json         print the raw JSON body

The API token is ALBUMFLOW_TOKEN, else the admin token in DATA_DIR/admin-token (default .data/admin-token).
`;

class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    url: { type: 'string', default: process.env.ALBUMFLOW_URL ?? 'http://127.0.0.1:3000' },
    json: { type: 'boolean', default: false },
    review: { type: 'boolean', default: false },
    state: { type: 'string' },
    limit: { type: 'string' },
    cursor: { type: 'string' },
    workspace: { type: 'string', default: 'demo' },
    secret: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const baseUrl = values.url.replace(/\/+$/, '');

async function request(method: 'GET' | 'POST', path: string, init: { body?: Buffer; headers?: Record<string, string> } = {}) {
  let response: Response;
  try {
    response = await fetch(`${baseUrl}${path}`, { method, body: init.body, headers: init.headers });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new CliError(`cannot reach albumflow at ${baseUrl} (${cause}). Is it running? Start it with \`npm start\` or pass --url.`, 2);
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

function errorMessage(status: number, body: unknown): string {
  const error = (body as { error?: { code?: string; message?: string } } | null)?.error;
  return error ? `${status} ${error.code}: ${error.message}` : `${status}: ${typeof body === 'string' ? body : JSON.stringify(body)}`;
}

function keyPath(parts: string[], count: number, what: string): string {
  if (parts.length !== count) throw new CliError(`expected ${count} arguments (${what}), got ${parts.length}\n\n${usage}`);
  return parts.map((part) => encodeURIComponent(part)).join('/');
}

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

/** One line saying what to set when the server refused the token; undefined for any other answer. */
function accessProblem(status: number, body: unknown, { token, source }: ApiCredential): string | undefined {
  if (status !== 401 && status !== 403) return undefined;
  const refusal = errorMessage(status, body);
  if (token === undefined) return `${refusal}. Set ALBUMFLOW_TOKEN to a token of the server's API_TOKENS (there is no ${source}).`;
  if (status === 401) return `${refusal}. The token from ${source} is not accepted: set ALBUMFLOW_TOKEN to a token of the server's API_TOKENS.`;
  return `${refusal}. The token from ${source} does not reach this workspace: set ALBUMFLOW_TOKEN to a token that API_TOKENS gives it.`;
}

async function show(path: string, format: (body: never) => string): Promise<void> {
  const credential = apiCredential();
  const headers: Record<string, string> = credential.token ? { authorization: `Bearer ${credential.token}` } : {};
  const { status, body } = await request('GET', path, { headers });
  if (status !== 200) throw new CliError(accessProblem(status, body, credential) ?? errorMessage(status, body));
  console.log(values.json ? JSON.stringify(body, null, 2) : format(body as never));
}

function secretFor(workspace: string): string | undefined {
  if (values.secret) return values.secret;
  if (process.env.ALBUMFLOW_SECRET) return process.env.ALBUMFLOW_SECRET;
  try {
    const secrets = JSON.parse(process.env.WORKSPACE_SECRETS ?? '{}') as Record<string, string[]>;
    return secrets[workspace]?.[0];
  } catch {
    return undefined;
  }
}

async function send(file: string | undefined): Promise<void> {
  if (!file) throw new CliError(`send needs a JSON file\n\n${usage}`);
  let body: Buffer;
  try {
    body = fs.readFileSync(file);
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const workspace = values.workspace;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const secret = secretFor(workspace);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-unifyport-timestamp': timestamp };
  if (secret) headers['x-unifyport-signature'] = signatureHeader(secret, timestamp, body);
  const { status, body: answer } = await request('POST', `/webhooks/unifyport/${encodeURIComponent(workspace)}`, { body, headers });
  if (status >= 300) throw new CliError(errorMessage(status, answer));
  console.log(`${status} ${JSON.stringify(answer)}`);
}

async function history(parts: string[]): Promise<void> {
  if (parts.length !== 5) throw new CliError(`history needs <workspace> <provider> <account> <conversation> <album>\n\n${usage}`);
  const [workspace, provider, accountId, conversationId, albumId] = parts as [string, string, string, string, string];
  const key: AlbumKey = { workspace, provider, accountId, conversationId, albumId };
  const workflowId = albumWorkflowId(key);
  const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const target = process.env.TEMPORAL_ADDRESS ? ` --address ${address} --namespace ${namespace}` : '';
  const quoted = `'${workflowId.replace(/'/g, `'\\''`)}'`;
  const lines = [
    `workflow id: ${workflowId}`,
    '',
    'Inspect it with the Temporal CLI:',
    `  temporal workflow describe --workflow-id ${quoted}${target}`,
    `  temporal workflow show --workflow-id ${quoted}${target}`,
    `  temporal workflow query --workflow-id ${quoted} --name status${target}`,
    '',
    `Temporal UI (embedded dev server): http://localhost:8233/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`,
  ];
  console.log(lines.join('\n'));

  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: 3_000 });
    const client = new Client({ connection, namespace });
    const runs: string[] = [];
    for await (const run of client.workflow.list({ query: `WorkflowId = "${workflowId.replace(/"/g, '\\"')}"` })) {
      runs.push(`  ${run.runId}  ${run.status.name.padEnd(10)}  started ${run.startTime.toISOString()}${run.closeTime ? `  closed ${run.closeTime.toISOString()}` : ''}`);
    }
    console.log(`\nRuns on ${address} (${namespace}):\n${runs.length ? runs.join('\n') : '  none'}`);
  } catch (err) {
    console.log(`\nTemporal at ${address} is unreachable (${(err as Error).message}); set TEMPORAL_ADDRESS to list the runs.`);
  } finally {
    await connection?.close();
  }
}

async function main(): Promise<void> {
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(usage);
    return;
  }
  switch (command) {
    case 'status':
      return show(`/workspaces/${keyPath(rest.slice(0, 1), 1, 'workspace')}/albums/${keyPath(rest.slice(1), 4, 'provider account conversation album')}`, (body: AlbumStatus) => formatAlbum(body));
    case 'message':
      return show(`/workspaces/${keyPath(rest.slice(0, 1), 1, 'workspace')}/messages/${keyPath(rest.slice(1), 4, 'provider account conversation message')}`, formatMessage);
    case 'list': {
      const query = new URLSearchParams();
      if (values.review) query.set('review', 'true');
      if (values.state) query.set('state', values.state);
      if (values.limit) query.set('limit', values.limit);
      if (values.cursor) query.set('cursor', values.cursor);
      const suffix = query.size ? `?${query.toString()}` : '';
      return show(`/workspaces/${keyPath(rest, 1, 'workspace')}/albums${suffix}`, (body: AlbumListBody) => formatAlbumList(body));
    }
    case 'send':
      return send(rest[0]);
    case 'history':
      return history(rest);
    default:
      throw new CliError(`unknown command "${command}"\n\n${usage}`);
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof CliError ? err.message : (err as Error).stack);
  process.exitCode = err instanceof CliError ? err.exitCode : 1;
});
