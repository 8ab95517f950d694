// What the platforms' CLI commands share: sending a file of webhook bodies as the platform would, the
// setWebhook-like call shown when the platform's API cannot be reached, and the registry entry (a bot, a
// channel) added and removed through the admin API.

import { terminalText } from '../common/terminal.js';
import { PlatformApiError } from './api.js';
import type { CliContext } from './platform.js';

/** `/webhooks/<platform>/<workspace>/<account>`, each segment URL-encoded. */
export function accountWebhookPath(platform: string, workspace: string, account: string): string {
  return `/webhooks/${platform}/${encodeURIComponent(workspace)}/${encodeURIComponent(account)}`;
}

/**
 * The bodies of a file to send: its bytes as they are when it holds one body (anything that is not a
 * JSON list, even a file that is no JSON), else each element of the list on its own, in order.
 */
export function webhookBodies(cli: CliContext, file: string): Array<{ body: Buffer; parsed: unknown }> {
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

/** The value of a required option naming an account of the workspace (`--bot`, `--channel`). */
export function requiredAccount(cli: CliContext, option: string, where: string): string {
  const value = cli.option(option);
  if (!value) throw cli.misuse(`--${option} <name> is needed: a ${option} of ${where}["${cli.workspace}"]`);
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

/** An admin API entry of a workspace that a platform's webhooks are addressed to: a Telegram bot, a LINE channel. */
export interface AccountKind {
  /** The admin API's collection: `/admin/workspaces/<ws>/<collection>`. */
  collection: string;
  /** What the CLI calls one: `bot`, `channel`. */
  noun: string;
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
