import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { albumWorkflowId } from '../../workflows/keys.js';
import type { AlbumKey, AlbumStatus } from '../../workflows/types.js';
import { ConfigError, loadConfig, type TelegramBot, type TelegramConfig } from '../config.js';
import { readUpdateTypes } from '../ingest/telegram.js';
import { signatureHeader } from '../signature.js';
import { BotApiError, createBotApi } from '../telegram/bot-api.js';
import { formatAlbum, formatAlbumList, formatMessage, type AlbumListBody } from './format.js';

const usage = `albumflow — inspect albums and send sample webhooks to a running albumflow

Usage:
  albumflow status  <workspace> <provider> <account> <conversation> <album>    [--json]
  albumflow message <workspace> <provider> <account> <conversation> <message>  [--json]
  albumflow list    <workspace> [--review] [--state collecting|processed|closed] [--limit N] [--cursor C] [--json]
  albumflow send    <event.json> [--workspace demo] [--secret S]
  albumflow send    --telegram <update.json> --bot B [--workspace demo] [--secret S]
  albumflow history <workspace> <provider> <account> <conversation> <album>
  albumflow telegram set-webhook --bot B --public-url URL [--workspace demo] [--print]

Options:
  --url URL         albumflow's HTTP address (ALBUMFLOW_URL, default http://127.0.0.1:3000)
  --secret S        for send: the signing secret (ALBUMFLOW_SECRET, else the workspace's first secret in
                    WORKSPACE_SECRETS); with --telegram, the bot's secret token (else
                    TELEGRAM_BOTS[workspace][bot].secretToken)
  --telegram FILE   send a Telegram Update (or a JSON list of Updates, one request each, in order) to
                    POST /webhooks/telegram/<workspace>/<bot>
  --bot B           a bot name of TELEGRAM_BOTS[workspace]
  --public-url URL  the address Telegram reaches albumflow at (HTTPS); the webhook is <URL>/webhooks/telegram/<workspace>/<bot>
  --print           show the setWebhook call instead of making it (its token and secret token left out)
  --json            print the raw JSON body
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
    telegram: { type: 'string' },
    bot: { type: 'string' },
    'public-url': { type: 'string' },
    print: { type: 'boolean', default: false },
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

async function show(path: string, format: (body: never) => string): Promise<void> {
  const { status, body } = await request('GET', path);
  if (status !== 200) throw new CliError(errorMessage(status, body));
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

function readFile(file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

async function send(file: string | undefined): Promise<void> {
  if (!file) throw new CliError(`send needs a JSON file\n\n${usage}`);
  const body = readFile(file);
  const workspace = values.workspace;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const secret = secretFor(workspace);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-unifyport-timestamp': timestamp };
  if (secret) headers['x-unifyport-signature'] = signatureHeader(secret, timestamp, body);
  const { status, body: answer } = await request('POST', `/webhooks/unifyport/${encodeURIComponent(workspace)}`, { body, headers });
  if (status >= 300) throw new CliError(errorMessage(status, answer));
  console.log(`${status} ${JSON.stringify(answer)}`);
}

/** TELEGRAM_BOTS and TELEGRAM_API_ROOT read as the server reads them, and nothing else of the environment. */
function telegramConfig(): TelegramConfig {
  const { TELEGRAM_BOTS, TELEGRAM_API_ROOT } = process.env;
  try {
    return loadConfig({ TELEGRAM_BOTS, TELEGRAM_API_ROOT }).telegram;
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
}

function requiredBot(): string {
  if (!values.bot) throw new CliError(`--bot <name> is needed: a bot of TELEGRAM_BOTS["${values.workspace}"]\n\n${usage}`);
  return values.bot;
}

function configuredBot(telegram: TelegramConfig, workspace: string, name: string): TelegramBot {
  const bot = telegram.bots.get(workspace)?.get(name);
  if (!bot) throw new CliError(`TELEGRAM_BOTS has no bot "${name}" in workspace "${workspace}"`);
  return bot;
}

function telegramWebhookPath(workspace: string, bot: string): string {
  return `/webhooks/telegram/${encodeURIComponent(workspace)}/${encodeURIComponent(bot)}`;
}

/** The file's bytes as they are when it holds one Update; each Update of a JSON list on its own. */
function updateBodies(file: string): Array<{ body: Buffer; updateId: unknown }> {
  const raw = readFile(file);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    return [{ body: raw, updateId: undefined }];
  }
  const updateIdOf = (update: unknown) => (update as { update_id?: unknown } | null)?.update_id;
  if (!Array.isArray(parsed)) return [{ body: raw, updateId: updateIdOf(parsed) }];
  return parsed.map((update: unknown) => ({ body: Buffer.from(JSON.stringify(update)), updateId: updateIdOf(update) }));
}

async function sendTelegram(file: string): Promise<void> {
  const workspace = values.workspace;
  const name = requiredBot();
  const secretToken = values.secret ?? telegramConfig().bots.get(workspace)?.get(name)?.secretToken;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (secretToken) headers['x-telegram-bot-api-secret-token'] = secretToken;
  for (const { body, updateId } of updateBodies(file)) {
    const { status, body: answer } = await request('POST', telegramWebhookPath(workspace, name), { body, headers });
    if (status >= 300) throw new CliError(`${errorMessage(status, answer)} (update_id ${JSON.stringify(updateId) ?? '(none)'})`);
    // albumflow answers Telegram with an empty body; anything else is shown.
    console.log(`${status} update_id ${JSON.stringify(updateId) ?? '(none)'}${answer === '' ? '' : ` ${JSON.stringify(answer)}`}`);
  }
}

async function setWebhook(): Promise<void> {
  const workspace = values.workspace;
  const name = requiredBot();
  const publicUrl = values['public-url']?.replace(/\/+$/, '');
  if (!publicUrl) throw new CliError(`--public-url <https://…> is needed: where Telegram reaches this albumflow\n\n${usage}`);
  const telegram = telegramConfig();
  const bot = configuredBot(telegram, workspace, name);
  const settings = { url: `${publicUrl}${telegramWebhookPath(workspace, name)}`, secretToken: bot.secretToken, allowedUpdates: readUpdateTypes };
  const entry = `TELEGRAM_BOTS["${workspace}"]["${name}"]`;
  const call = [
    `POST ${telegram.apiRoot}/bot<${entry}.token>/setWebhook`,
    'content-type: application/json',
    '',
    JSON.stringify({ url: settings.url, secret_token: `<${entry}.secretToken>`, allowed_updates: settings.allowedUpdates }, null, 2),
  ].join('\n');
  if (values.print) {
    console.log(call);
    return;
  }
  try {
    const description = await createBotApi({ apiRoot: telegram.apiRoot, token: bot.token }).setWebhook(settings);
    console.log(`${description}: bot ${bot.id} (${entry}) now posts ${settings.allowedUpdates.join(', ')} to ${settings.url}`);
  } catch (err) {
    if (!(err instanceof BotApiError)) throw err;
    if (err.retryable) throw new CliError(`${err.message}\n\nThe call to make once the Bot API is reachable:\n\n${call}`, 2);
    throw new CliError(err.message);
  }
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
      return values.telegram === undefined ? send(rest[0]) : sendTelegram(values.telegram);
    case 'history':
      return history(rest);
    case 'telegram':
      if (rest[0] === 'set-webhook') return setWebhook();
      throw new CliError(`unknown telegram command "${rest[0] ?? ''}"\n\n${usage}`);
    default:
      throw new CliError(`unknown command "${command}"\n\n${usage}`);
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof CliError ? err.message : (err as Error).stack);
  process.exitCode = err instanceof CliError ? err.exitCode : 1;
});
