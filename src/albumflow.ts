// The albumflow command: its own subcommands (src/cli/) and each platform's (src/platforms/<platform>/cli.ts).
import { CliError, cliConfig, createApi, misuse, readFile, type Api } from './cli/api.js';
import { deliveriesCommand, endpointCommand, eventsCommand } from './cli/endpoints.js';
import { eraseCommand, erasureCommand } from './cli/erase.js';
import { formatAlbum, formatAlbumList, formatMessage, plural } from './cli/format.js';
import { parse, type Values } from './cli/options.js';
import { auditCommand, rekeyCommand, rotateLinkKeyCommand, secretCommand, tokenCommand, workspaceCommand } from './cli/tenants.js';
import { say, terminalJson, terminalText } from './common/terminal.js';
import type { AlbumView } from './domain/types.js';
import type { AlbumListBody, MessageStatus } from './http/schemas.js';
import { platforms } from './platforms/index.js';
import type { CliContext } from './platforms/platform.js';

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
  albumflow erase workspace    <workspace>                                                 [--no-wait] [--json]
  albumflow erasure <workspace> <erasure id> [--json]

  albumflow endpoint add <workspace> <url> [--types T,T] [--description D] [--rate-limit N] [--json]
  albumflow endpoint list <workspace> | show <workspace> <endpoint id>                   [--json]
  albumflow endpoint disable|enable|rotate|remove <workspace> <endpoint id>
  albumflow endpoint replay <workspace> <endpoint id> --since ISO-TIME
  albumflow deliveries <workspace> <endpoint id> [--state pending|failed|held|delivered] [--limit N] [--cursor C] [--json]
  albumflow events <workspace> [--after C] [--types T,T] [--limit N] [--follow] [--json]

  albumflow workspace add <workspace> | list | remove <workspace> | retention <workspace> <days|forever|default>
  albumflow secret add <workspace> [--secret S] | retire <workspace> <secret id>
  albumflow token create <name> <workspace>… [--expires-at ISO-TIME] | list | revoke <token id>
  albumflow audit [--limit N]
  albumflow secrets rekey | rotate-link-key
  albumflow help

Sending webhooks as a platform does, and a platform's own settings:
${platforms.map(({ cli }) => cli.help.usage).join('\n')}

Options:
  --url URL         albumflow's HTTP address (ALBUMFLOW_URL, default http://127.0.0.1:3000)
  --secret S        for send: what the sender proves the body with (a signing secret, a bot's secret token,
                    a channel secret: see each below); for secret add: the signing secret (default: one
                    generated and shown once)
${platforms.map(({ cli }) => cli.help.options).join('\n')}
  --now             for send --telegram and --line: move the file's dates by one amount so that the latest is
                    now (a message older than REPLAY_HORIZON_S is answered and not stored)
  --public-url URL  the address a platform reaches albumflow at (HTTPS), for set-webhook: the webhook is
                    <URL>/webhooks/<platform>/<workspace>/<bot or channel>
  --print           show the set-webhook call instead of making it (tokens and secrets left out)
  --note TEXT       for resolve-review: why the review is resolved
  --no-wait         for erase: print the erasure's id and return (default: wait until it is done and
                    print what it removed)
  --expires-at T    for token create: when the token stops working (ISO 8601)
  --types T,T       for endpoint add: the notification types it receives (album.ready, album.updated,
                    album.media_settled, message.ready, album.erased, message.erased; default all); for
                    events: the types to read
  --description D   for endpoint add: what the endpoint is, for people
  --rate-limit N    for endpoint add: requests a second at most (default 10)
  --since T         for endpoint replay: every notification recorded since then is sent again (ISO 8601)
  --after C         for events: read after this cursor (the "next" an earlier read printed)
  --follow          for events: go on reading, each event as it commits, until Ctrl-C
  --json            print the raw JSON body
  -h, --help        this text

The API token is ALBUMFLOW_TOKEN, else the admin token in DATA_DIR/admin-token (default .data/admin-token).
workspace, secret, token, audit and a platform's add and remove call the admin API: they need a "*" token. A
workspace of the admin API takes UnifyPort webhooks once it has a secret; changes reach every albumflow
process within 2 s. secrets rekey works on PostgreSQL (DATABASE_URL): with ALBUMFLOW_SECRET_KEY="<new>,<old>"
it seals every stored secret under <new>; without, it replaces DATA_DIR/secret-key with a new key.
secrets rotate-link-key (DATABASE_URL too) makes a new key sign the media_url links; links signed with the
one before work until they expire (MEDIA_URL_LIFETIME_S).
endpoint, deliveries and events need a token that reaches the workspace; the workspace * names every
endpoint by its id through the admin API (a "*" token): the environment endpoint (NOTIFY_URL) is
ep_environment there (albumflow endpoint enable '*' ep_environment). events prints each event as a line
of JSON, and the cursor to go on from on stderr.
erase removes an album, a message or a whole conversation for good (rows, raw events, media no other album
keeps, and the workflows whose histories hold them); a redelivery of it is acknowledged and not stored.
erase workspace (a "*" token) offboards a customer: it removes the workspace, then everything of it
(also its endpoints, deliveries and feed); once it is done the name can be added again.
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

/** What a platform's commands are given: the options, the API client and the CLI's errors. */
function platformContext(api: Api, values: Values): CliContext {
  return {
    workspace: values.workspace,
    option: (name) => (typeof values[name] === 'string' ? values[name] : undefined),
    flag: (name) => values[name] === true,
    api,
    say: (text) => say(text),
    fail: (message) => new CliError(message),
    misuse,
    config: cliConfig,
    readFile,
  };
}

/** `send --<option> FILE` as the platform that option names, else `send FILE` as the platform that sends plain files. */
function send(cli: CliContext, rest: string[]): Promise<void> {
  for (const { cli: platform } of platforms) {
    const file = platform.sendOption === null ? undefined : cli.option(platform.sendOption);
    if (file === undefined) continue;
    if (rest.length !== 0) throw misuse(`send --${platform.sendOption} takes no other argument, got ${rest.length}`);
    return platform.send(cli, file);
  }
  if (rest.length !== 1) throw misuse(`send takes one argument (<event.json>), got ${rest.length}`);
  return platforms.find(({ cli: platform }) => platform.sendOption === null)!.cli.send(cli, rest[0]!);
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parse(argv, Object.fromEntries(platforms.flatMap(({ cli }) => Object.entries(cli.options))));
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
      const { printRuns } = await import('./cli/history.js');
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
    case 'endpoint':
      return endpointCommand(api, values, rest);
    case 'deliveries':
      return deliveriesCommand(api, values, rest);
    case 'events':
      return eventsCommand(api, values, rest);
    case 'send':
      return send(platformContext(api, values), rest);
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
      if (rest[0] === 'rotate-link-key' && rest.length === 1) return rotateLinkKeyCommand();
      throw misuse(`unknown secrets command "${rest.join(' ')}" (there are: secrets rekey, secrets rotate-link-key)`);
    default: {
      const platform = platforms.find(({ name }) => name === command);
      if (!platform) throw misuse(`unknown command "${command}"`);
      const [name, ...args] = rest;
      const run = name === undefined ? undefined : platform.cli.commands[name];
      if (!run) {
        const known = Object.keys(platform.cli.commands).join(', ');
        throw misuse(`unknown ${command} command "${rest.join(' ')}" (there are: ${command} ${known})`);
      }
      return run(platformContext(api, values), args);
    }
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
