import type { AlbumListBody, MessageStatus } from '../http/schemas.js';
import type { AlbumView } from '../domain/types.js';
import { signatureHeader } from '../common/signature.js';
import { CliError, createApi, misuse } from './api.js';
import { eraseCommand, erasureCommand } from './erase.js';
import { formatAlbum, formatAlbumList, formatMessage, plural } from './format.js';
import { parse, type Values } from './options.js';
import { sendLine, setLineWebhook } from './line.js';
import { readFile, sendTelegram, setWebhook } from './telegram.js';
import { say, terminalJson, terminalText } from './terminal.js';
import { addBot, addChannel, auditCommand, rekeyCommand, removeEntry, secretCommand, tokenCommand, workspaceCommand } from './tenants.js';

const usage = `albumflow — inspect albums, act on them, and send sample webhooks to a running albumflow

Usage:
  albumflow status  <workspace> <provider> <account> <conversation> <album>    [--json]
  albumflow message <workspace> <provider> <account> <conversation> <message>  [--json]
  albumflow list    <workspace> [--review] [--state collecting|processed|closed] [--limit N] [--cursor C] [--json]
  albumflow history <workspace> <provider> <account> <conversation> <album-or-message>
  albumflow retry-downloads <workspace> <provider> <account> <conversation> <album>
  albumflow resolve-review  <workspace> <provider> <account> <conversation> <album> [--note TEXT]
  albumflow erase album        <workspace> <provider> <account> <conversation> <album>    [--no-wait] [--json]
  albumflow erase message      <workspace> <provider> <account> <conversation> <message>  [--no-wait] [--json]
  albumflow erase conversation <workspace> <provider> <account> <conversation>            [--no-wait] [--json]
  albumflow erasure <workspace> <erasure id> [--json]
  albumflow send    <event.json> [--workspace demo] [--secret S]
  albumflow send    --telegram <update.json> --bot B [--workspace demo] [--secret S]
  albumflow telegram set-webhook --bot B --public-url URL [--workspace demo] [--print]
                                 [--token T --secret-token S]   (a bot of the admin API)
  albumflow send    --line <body.json> --channel C [--workspace demo] [--secret S]
  albumflow line set-webhook --channel C --public-url URL [--workspace demo] [--print]

  albumflow workspace add <workspace> | list | remove <workspace> | retention <workspace> <days|forever|default>
  albumflow secret add <workspace> [--secret S] | retire <workspace> <secret id>
  albumflow token create <name> <workspace>… [--expires-at ISO-TIME] | list | revoke <token id>
  albumflow telegram add-bot <workspace> <bot> --token T [--secret-token S] | remove-bot <workspace> <bot>
  albumflow line add-channel <workspace> <channel> --channel-secret S --channel-access-token T
  albumflow line remove-channel <workspace> <channel>
  albumflow audit [--limit N]
  albumflow secrets rekey
  albumflow help

Options:
  --url URL         albumflow's HTTP address (ALBUMFLOW_URL, default http://127.0.0.1:3000)
  --secret S        for send: the signing secret (ALBUMFLOW_SECRET, else the workspace's first secret in
                    WORKSPACE_SECRETS); with --telegram, the bot's secret token (else
                    TELEGRAM_BOTS[workspace][bot].secretToken)
  --telegram FILE   send a Telegram Update (or a JSON list of Updates, one request each, in order) to
                    POST /webhooks/telegram/<workspace>/<bot>
  --bot B           a bot name of TELEGRAM_BOTS[workspace]
  --line FILE       send a LINE webhook body (or a JSON list of bodies, one request each, in order) to
                    POST /webhooks/line/<workspace>/<channel>, signed with --secret, else
                    LINE_CHANNELS[workspace][channel].channelSecret
  --channel C       a channel name of LINE_CHANNELS[workspace]
  --public-url URL  the address Telegram or LINE reaches albumflow at (HTTPS); the webhook is
                    <URL>/webhooks/telegram/<workspace>/<bot> or <URL>/webhooks/line/<workspace>/<channel>
  --print           show the setWebhook or webhook endpoint call instead of making it (tokens and secrets left out)
  --note TEXT       for resolve-review: why the review is resolved
  --no-wait         for erase: print the erasure's id and return (default: wait until it is done and
                    print what it removed)
  --secret S        for secret add: the signing secret (default: one generated and shown once)
  --token T         for telegram add-bot: the bot token (else TELEGRAM_BOT_TOKEN)
  --secret-token S  for telegram add-bot: setWebhook's secret_token (default: one generated and shown once)
  --channel-secret S, --channel-access-token T
                    for line add-channel (else LINE_CHANNEL_SECRET, LINE_CHANNEL_ACCESS_TOKEN)
  --expires-at T    for token create: when the token stops working (ISO 8601)
  --json            print the raw JSON body
  -h, --help        this text

The API token is ALBUMFLOW_TOKEN, else the admin token in DATA_DIR/admin-token (default .data/admin-token).
workspace, secret, token, add-bot, add-channel and audit call the admin API: they need a "*" token. A
workspace of the admin API takes UnifyPort webhooks once it has a secret; changes reach every albumflow
process within 2 s. secrets rekey works on PostgreSQL (DATABASE_URL): with ALBUMFLOW_SECRET_KEY="<new>,<old>"
it seals every stored secret under <new>; without, it replaces DATA_DIR/secret-key with a new key.
erase removes an album, a message or a whole conversation for good (rows, raw events, media no other album
keeps, and the workflows whose histories hold them); a redelivery of it is acknowledged and not stored.
history reaches Temporal as albumflow does: TEMPORAL_ADDRESS with TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
TEMPORAL_TLS_* or TEMPORAL_PROFILE, else the embedded dev server of the albumflow running on DATA_DIR (else
127.0.0.1:TEMPORAL_PORT); its Temporal UI link is TEMPORAL_UI_URL, else that embedded server's.
`;

function keyPath(parts: string[], what: string): string {
  if (parts.length !== 5) throw misuse(`expected 5 arguments (${what}), got ${parts.length}`);
  const [workspace, ...rest] = parts.map((part) => encodeURIComponent(part));
  return `/workspaces/${workspace}/${rest.join('/')}`;
}

const albumKeyWords = '<workspace> <provider> <account> <conversation> <album>';

function secretFor(workspace: string, values: Values): string | undefined {
  if (values.secret) return values.secret;
  if (process.env.ALBUMFLOW_SECRET) return process.env.ALBUMFLOW_SECRET;
  try {
    const secrets = JSON.parse(process.env.WORKSPACE_SECRETS ?? '{}') as Record<string, string[]>;
    return secrets[workspace]?.[0];
  } catch {
    return undefined;
  }
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parse(argv);
  const [command, ...rest] = positionals;
  if (values.help || command === 'help') {
    say(usage);
    return;
  }
  if (!command) {
    process.stderr.write(usage);
    throw new CliError('no command given', 2);
  }
  const api = createApi(values.url.replace(/\/+$/, ''));
  const print = (body: unknown, format: () => string) => say(values.json ? terminalJson(body) : format());

  switch (command) {
    case 'status': {
      const album = await api.expect<AlbumView>('GET', keyPath(rest, albumKeyWords).replace(/^(\/workspaces\/[^/]+)\//, '$1/albums/'));
      return print(album, () => formatAlbum(album));
    }
    case 'message': {
      const path = keyPath(rest, '<workspace> <provider> <account> <conversation> <message>').replace(
        /^(\/workspaces\/[^/]+)\//,
        '$1/messages/',
      );
      const message = await api.expect<MessageStatus>('GET', path);
      return print(message, () => formatMessage(message));
    }
    case 'list': {
      if (rest.length !== 1) throw misuse(`list takes one argument (<workspace>), got ${rest.length}`);
      const query = new URLSearchParams();
      if (values.review) query.set('review', 'true');
      if (values.state) query.set('state', values.state);
      if (values.limit) query.set('limit', values.limit);
      if (values.cursor) query.set('cursor', values.cursor);
      const suffix = query.size ? `?${query.toString()}` : '';
      const list = await api.expect<AlbumListBody>('GET', `/workspaces/${encodeURIComponent(rest[0]!)}/albums${suffix}`);
      return print(list, () => formatAlbumList(list));
    }
    case 'history': {
      const base = keyPath(rest, `${albumKeyWords.slice(0, -'<album>'.length)}<album-or-message>`);
      // The Temporal SDK (a native module) loads for this command alone: every other one starts without it.
      const { printRuns } = await import('./temporal.js');
      const album = await api.authorized('GET', base.replace(/^(\/workspaces\/[^/]+)\//, '$1/albums/'));
      if (album.status === 200) return printRuns((album.body as AlbumView).workflowId);
      const message = await api.authorized('GET', base.replace(/^(\/workspaces\/[^/]+)\//, '$1/messages/'));
      if (message.status === 200) return printRuns((message.body as MessageStatus).workflowId);
      if (album.status === 404 && message.status === 404) throw new CliError('404: no album and no message with this id was ever stored');
      throw api.refusal(album.status === 404 ? message.status : album.status, album.status === 404 ? message.body : album.body);
    }
    case 'retry-downloads': {
      const path = `${keyPath(rest, albumKeyWords).replace(/^(\/workspaces\/[^/]+)\//, '$1/albums/')}/actions/retry-downloads`;
      const { retried } = await api.expect<{ retried: number }>('POST', path);
      return print({ retried }, () => `${plural(retried, 'attachment')} set back to pending; their downloads are starting`);
    }
    case 'resolve-review': {
      const path = `${keyPath(rest, albumKeyWords).replace(/^(\/workspaces\/[^/]+)\//, '$1/albums/')}/actions/resolve-review`;
      const answer = await api.expect<{ resolved: { at: string; note: string } }>('POST', path, {
        body: JSON.stringify({ note: values.note }),
        headers: { 'content-type': 'application/json' },
      });
      return print(answer, () =>
        terminalText(`review resolved at ${answer.resolved.at}${answer.resolved.note ? `: ${answer.resolved.note}` : ''}`),
      );
    }
    case 'erase':
      return eraseCommand(api, values, rest);
    case 'erasure':
      return erasureCommand(api, values, rest);
    case 'send': {
      if (values.line !== undefined) {
        if (rest.length !== 0) throw misuse(`send --line takes no other argument, got ${rest.length}`);
        return sendLine(api, values, values.line);
      }
      if (values.telegram !== undefined) {
        if (rest.length !== 0) throw misuse(`send --telegram takes no other argument, got ${rest.length}`);
        return sendTelegram(api, values, values.telegram);
      }
      if (rest.length !== 1) throw misuse(`send takes one argument (<event.json>), got ${rest.length}`);
      const file = rest[0]!;
      const body = readFile(file);
      const workspace = values.workspace;
      const timestamp = String(Math.floor(Date.now() / 1000));
      const secret = secretFor(workspace, values);
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-unifyport-timestamp': timestamp };
      if (secret) headers['x-unifyport-signature'] = signatureHeader(secret, timestamp, body);
      const { status, body: answer } = await api.request('POST', `/webhooks/unifyport/${encodeURIComponent(workspace)}`, { body, headers });
      if (status >= 300) throw api.refusal(status, answer);
      say(`${status} ${terminalJson(answer, 0)}`);
      return;
    }
    case 'telegram':
      if (rest[0] === 'set-webhook' && rest.length === 1) return setWebhook(values);
      if (rest[0] === 'add-bot') return addBot(api, values, rest.slice(1));
      if (rest[0] === 'remove-bot') return removeEntry(api, 'telegram-bots', rest.slice(1));
      throw misuse(`unknown telegram command "${rest.join(' ')}" (there are: telegram set-webhook, add-bot, remove-bot)`);
    case 'line':
      if (rest[0] === 'set-webhook' && rest.length === 1) return setLineWebhook(values);
      if (rest[0] === 'add-channel') return addChannel(api, values, rest.slice(1));
      if (rest[0] === 'remove-channel') return removeEntry(api, 'line-channels', rest.slice(1));
      throw misuse(`unknown line command "${rest.join(' ')}" (there are: line set-webhook, add-channel, remove-channel)`);
    case 'workspace':
      return workspaceCommand(api, values, rest);
    case 'secret':
      return secretCommand(api, values, rest);
    case 'token':
      return tokenCommand(api, values, rest);
    case 'audit':
      return auditCommand(api, values, rest);
    case 'secrets':
      if (rest[0] === 'rekey' && rest.length === 1) return rekeyCommand();
      throw misuse(`unknown secrets command "${rest.join(' ')}" (there is: secrets rekey)`);
    default:
      throw misuse(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof CliError) {
    say(`albumflow: ${err.message}`, process.stderr);
    process.exitCode = err.exitCode;
    return;
  }
  say(`albumflow: ${terminalText(err instanceof Error ? err.message : String(err))}`, process.stderr);
  process.exitCode = 1;
});
