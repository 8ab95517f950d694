// `albumflow send <event.json>`: a UnifyPort event, signed as UnifyPort signs it.
import { signatureHeader } from '../../common/signature.js';
import { terminalJson } from '../../common/terminal.js';
import type { CliContext, PlatformCli } from '../platform.js';
import { signatureHeaderName, timestampHeader } from './route.js';

/** --secret, else ALBUMFLOW_SECRET, else the workspace's first secret in WORKSPACE_SECRETS. */
function secretFor(cli: CliContext): string | undefined {
  const given = cli.option('secret') ?? process.env.ALBUMFLOW_SECRET;
  if (given) return given;
  try {
    const secrets = JSON.parse(process.env.WORKSPACE_SECRETS ?? '{}') as Record<string, string[]>;
    return secrets[cli.workspace]?.[0];
  } catch {
    return undefined;
  }
}

async function send(cli: CliContext, file: string): Promise<void> {
  const body = cli.readFile(file);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const secret = secretFor(cli);
  const headers: Record<string, string> = { 'content-type': 'application/json', [timestampHeader]: timestamp };
  if (secret) headers[signatureHeaderName] = signatureHeader(secret, timestamp, body);
  const { status, body: answer } = await cli.api.request('POST', `/webhooks/unifyport/${encodeURIComponent(cli.workspace)}`, {
    body,
    headers,
  });
  if (status >= 300) {
    const refused = cli.api.refusal(status, answer);
    if (secret) throw refused;
    // The server's missing_signature alone reads as if the CLI had signed wrongly.
    refused.message += `. The event was sent unsigned: no --secret was given, nor ALBUMFLOW_SECRET, and WORKSPACE_SECRETS here names no secret of "${cli.workspace}" (a workspace added at runtime has its secrets in the database: pass one with --secret)`;
    throw refused;
  }
  cli.say(`${status} ${terminalJson(answer, 0)}`);
}

export const unifyportCli: PlatformCli = {
  options: {},
  help: {
    usage: '  albumflow send    <event.json> [--workspace demo] [--secret S]',
    options: `  <event.json>      a UnifyPort event for POST /webhooks/unifyport/<workspace>, signed with --secret, else
                    ALBUMFLOW_SECRET, else the workspace's first secret in WORKSPACE_SECRETS`,
  },
  sendOption: null,
  send,
  commands: {},
};
