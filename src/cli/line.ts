import type { LineChannel, LineConfig } from '../common/config.js';
import { lineSignature } from '../common/signature.js';
import { LineApiError, createMessagingApi, webhookEndpointPath } from '../line/messaging-api.js';
import { CliError, cliConfig, misuse, type Api } from './api.js';
import type { Values } from './options.js';
import { readFile } from './telegram.js';
import { say, terminalJson, terminalText } from './terminal.js';

/** LINE_CHANNELS, LINE_API_ROOT and LINE_DATA_API_ROOT read as the server reads them, and nothing else of the environment. */
function lineConfig(): LineConfig {
  return cliConfig(['LINE_CHANNELS', 'LINE_API_ROOT', 'LINE_DATA_API_ROOT']).line;
}

function requiredChannel(values: Values): string {
  if (!values.channel) throw misuse(`--channel <name> is needed: a channel of LINE_CHANNELS["${values.workspace}"]`);
  return values.channel;
}

function configuredChannel(line: LineConfig, workspace: string, name: string): LineChannel {
  const channel = line.channels.get(workspace)?.get(name);
  if (!channel) throw new CliError(`LINE_CHANNELS has no channel "${name}" in workspace "${workspace}"`);
  return channel;
}

export function lineWebhookPath(workspace: string, channel: string): string {
  return `/webhooks/line/${encodeURIComponent(workspace)}/${encodeURIComponent(channel)}`;
}

/** The file's bytes as they are when it holds one webhook body; each body of a JSON list on its own. */
function webhookBodies(file: string): Array<{ body: Buffer; events: number | null }> {
  const raw = readFile(file);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    return [{ body: raw, events: null }];
  }
  const eventsOf = (body: unknown) => {
    const events = (body as { events?: unknown } | null)?.events;
    return Array.isArray(events) ? events.length : null;
  };
  if (!Array.isArray(parsed)) return [{ body: raw, events: eventsOf(parsed) }];
  return parsed.map((body: unknown) => ({ body: Buffer.from(JSON.stringify(body)), events: eventsOf(body) }));
}

/** `send --line`: posts each webhook body as LINE would, signed with the channel secret. */
export async function sendLine(api: Api, values: Values, file: string): Promise<void> {
  const workspace = values.workspace;
  const name = requiredChannel(values);
  const secret = values.secret ?? lineConfig().channels.get(workspace)?.get(name)?.channelSecret;
  for (const { body, events } of webhookBodies(file)) {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (secret) headers['x-line-signature'] = lineSignature(secret, body);
    const { status, body: answer } = await api.request('POST', lineWebhookPath(workspace, name), { body, headers });
    const shown = events === null ? 'a body without events[]' : `${events} event${events === 1 ? '' : 's'}`;
    if (status >= 300) throw new CliError(`${api.refusal(status, answer).message} (${shown})`);
    say(`${status} ${shown}${answer === '' ? '' : ` ${terminalJson(answer, 0)}`}`);
  }
}

/** `line set-webhook`: sets (or, with --print or an unreachable API, shows) the channel's webhook endpoint. */
export async function setLineWebhook(values: Values): Promise<void> {
  const workspace = values.workspace;
  const name = requiredChannel(values);
  const publicUrl = values['public-url']?.replace(/\/+$/, '');
  if (!publicUrl) throw misuse('--public-url <https://…> is needed: where LINE reaches this albumflow');
  const line = lineConfig();
  const channel = configuredChannel(line, workspace, name);
  const endpoint = `${publicUrl}${lineWebhookPath(workspace, name)}`;
  const entry = `LINE_CHANNELS["${workspace}"]["${name}"]`;
  const call = [
    `PUT ${line.apiRoot}${webhookEndpointPath}`,
    `authorization: Bearer <${entry}.channelAccessToken>`,
    'content-type: application/json',
    '',
    JSON.stringify({ endpoint }, null, 2),
  ].join('\n');
  if (values.print) {
    say(call);
    return;
  }
  try {
    await createMessagingApi({
      apiRoot: line.apiRoot,
      dataApiRoot: line.dataApiRoot,
      channelAccessToken: channel.channelAccessToken,
    }).setWebhookEndpoint(endpoint);
    say(terminalText(`the webhook URL of ${entry} is now ${endpoint}; turn on "Use webhook" in the LINE Developers console`));
  } catch (err) {
    if (!(err instanceof LineApiError)) throw err;
    const message = terminalText(err.message);
    if (err.retryable) throw new CliError(`${message}\n\nThe call to make once the LINE API is reachable:\n\n${call}`);
    throw new CliError(message);
  }
}
