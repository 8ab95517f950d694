// What the platforms' CLI commands share: sending a file of webhook bodies as the platform would, the
// setWebhook-like call shown when the platform's API cannot be reached, and the registry entry (a bot, a
// channel) added and removed through the admin API.

import { terminalJson, terminalText } from '../common/terminal.js';
import { PlatformApiError } from './api.js';
import { moveTimesToNow, type BodyTimes } from './body-times.js';
import type { CliContext } from './platform.js';
import type { AccountKind } from './webhook-route.js';

/** `/webhooks/<platform>/<workspace>/<account>`, each segment URL-encoded. */
export function accountWebhookPath(platform: string, workspace: string, account: string): string {
  return `/webhooks/${platform}/${encodeURIComponent(workspace)}/${encodeURIComponent(account)}`;
}

/**
 * The bodies of a file to send: its bytes as they are when it holds one body (anything that is not a
 * JSON list, even a file that is no JSON), else each element of the list on its own, in order.
 */
function webhookBodies(cli: CliContext, file: string): Array<{ body: Buffer; parsed: unknown }> {
  const raw = cli.readFile(file);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    return [{ body: raw, parsed: undefined }];
  }
  if (!Array.isArray(parsed)) return [{ body: raw, parsed }];
  return parsed.map((element: unknown) => ({ body: Buffer.from(JSON.stringify(element)), parsed: element }));
}

/**
 * Posts each body of the file to the platform's webhook route, as the platform would (`headers`: its
 * proof of each body), and prints each answer; the first refusal stops it. `describe` names a body in
 * what is printed (`update_id 7`, `2 events`). With --now, the bodies' `times` are moved so that the
 * latest is now (./body-times.ts) and the bodies sent as JSON again.
 */
export async function postWebhookBodies(
  cli: CliContext,
  path: string,
  file: string,
  headers: (body: Buffer) => Record<string, string>,
  describe: (parsed: unknown) => string,
  times: BodyTimes,
): Promise<void> {
  let bodies = webhookBodies(cli, file);
  if (cli.flag('now')) {
    const parsed = bodies.map((body) => body.parsed);
    moveTimesToNow(parsed, times);
    bodies = bodies.map((body, i) =>
      body.parsed === undefined ? body : { body: Buffer.from(JSON.stringify(parsed[i])), parsed: parsed[i] },
    );
  }
  for (const { body, parsed } of bodies) {
    const shown = describe(parsed);
    const answer = await cli.api.request('POST', path, { body, headers: { 'content-type': 'application/json', ...headers(body) } });
    if (answer.status >= 300) throw cli.fail(`${cli.api.refusal(answer.status, answer.body).message} (${shown})`);
    // albumflow answers these platforms with an empty body; anything else is shown.
    cli.say(`${answer.status} ${shown}${answer.body === '' ? '' : ` ${terminalJson(answer.body, 0)}`}`);
  }
}

/** An account of the environment (TELEGRAM_BOTS, LINE_CHANNELS) in the CLI's workspace, or the CLI's error naming what is missing. */
export function configuredAccount<T>(
  cli: CliContext,
  accounts: ReadonlyMap<string, ReadonlyMap<string, T>>,
  { noun, variable }: AccountKind,
  name: string,
): T {
  const account = accounts.get(cli.workspace)?.get(name);
  if (!account) throw cli.fail(`${variable} has no ${noun} "${name}" in workspace "${cli.workspace}"`);
  return account;
}

/** What `<platform> set-webhook` points the platform at: an account's webhook URL under --public-url. */
export interface WebhookTarget {
  /** The account's name (--bot, --channel). */
  name: string;
  /** `<public URL>/webhooks/<platform>/<workspace>/<name>` */
  url: string;
  /** How the environment names the account (`TELEGRAM_BOTS["demo"]["b"]`), for the call shown instead of its secrets. */
  entry: string;
}

/** The target of `<platform> set-webhook` (which takes options only): `option` names the account, `variable` the environment's accounts. */
export function webhookTarget(
  cli: CliContext,
  args: string[],
  platform: { name: string; title: string },
  account: AccountKind,
): WebhookTarget {
  if (args.length !== 0) throw cli.misuse(`${platform.name} set-webhook takes no argument, got ${args.length}`);
  const name = requiredAccount(cli, account);
  const publicUrl = cli.option('public-url')?.replace(/\/+$/, '');
  if (!publicUrl) throw cli.misuse(`--public-url <https://…> is needed: where ${platform.title} reaches this albumflow`);
  return {
    name,
    url: `${publicUrl}${accountWebhookPath(platform.name, cli.workspace, name)}`,
    entry: `${account.variable}["${cli.workspace}"]["${name}"]`,
  };
}

/** The account the command is about: the option named like the URL's parameter (`--bot`, `--channel`). */
export function requiredAccount(cli: CliContext, { param, variable }: AccountKind): string {
  const value = cli.option(param);
  if (!value) throw cli.misuse(`--${param} <name> is needed: a ${param} of ${variable}["${cli.workspace}"]`);
  return value;
}

/**
 * Makes a call to the platform's API for the CLI (setWebhook and the like); its refusal is the CLI's
 * error, on one line, and when the API could not be reached, with the call to make once it can be.
 */
export async function callPlatformApi(cli: CliContext, apiName: string, call: string, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (err) {
    if (!(err instanceof PlatformApiError)) throw err;
    const message = terminalText(err.message);
    if (err.retryable) throw cli.fail(`${message}\n\nThe call to make once ${apiName} is reachable:\n\n${call}`);
    throw cli.fail(message);
  }
}

export function accountArguments(cli: CliContext, { noun }: AccountKind, args: string[]): [workspace: string, name: string] {
  if (args.length !== 2)
    throw cli.misuse(`expected <workspace> <${noun} name>, got ${args.length} argument${args.length === 1 ? '' : 's'}`);
  return [args[0]!, args[1]!];
}

/** Adds the entry through the admin API; the answer is the created entry. */
export function addAccount<T>(cli: CliContext, kind: AccountKind, workspace: string, body: object): Promise<T> {
  return cli.api.expect<T>('POST', `/admin/workspaces/${encodeURIComponent(workspace)}/${kind.collection}`, {
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
}

export async function removeAccount(cli: CliContext, kind: AccountKind, args: string[]): Promise<void> {
  const [workspace, name] = accountArguments(cli, kind, args);
  await cli.api.expect('DELETE', `/admin/workspaces/${encodeURIComponent(workspace)}/${kind.collection}/${encodeURIComponent(name)}`);
  cli.say(terminalText(`${kind.noun} ${name} removed from ${workspace}: its webhook answers 404`));
}
