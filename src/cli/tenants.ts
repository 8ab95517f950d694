// The tenant commands: workspaces, signing secrets and API tokens through the admin API of a running
// albumflow (a `*` token), and `secrets rekey` and `secrets rotate-link-key`, which work on PostgreSQL
// itself. A platform's own entries (Telegram bots, LINE channels) are its commands
// (src/platforms/<platform>/cli.ts).
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { AuditInfo, TokenInfo, WorkspaceInfo } from '../tenants/schemas.js';
import { connectionConfig, createPool } from '../db/pool.js';
import { resolveSecretKey, secretKeyPath } from '../common/secret-key.js';
import { rotateLinkKey } from '../media/link-keys.js';
import { rekey } from '../tenants/rekey.js';
import { CliError, cliConfig, misuse, type Api } from './api.js';
import { plural, table } from './format.js';
import type { Values } from './options.js';
import { say, terminalJson, terminalLines, terminalText } from '../common/terminal.js';

const segment = encodeURIComponent;
const json = (body: unknown) => ({ body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

function args(rest: string[], count: number, words: string): string[] {
  if (rest.length !== count) throw misuse(`expected ${words}, got ${rest.length} argument${rest.length === 1 ? '' : 's'}`);
  return rest;
}

/** A secret generated for the operator when none is given: 32 random bytes, URL-safe. */
const generated = () => crypto.randomBytes(32).toString('base64url');

export async function workspaceCommand(api: Api, values: Values, [action, ...rest]: string[]): Promise<void> {
  switch (action) {
    case 'add': {
      const [name] = args(rest, 1, '<workspace>');
      const workspace = await api.expect<WorkspaceInfo>('POST', '/admin/workspaces', json({ name }));
      if (values.json) return say(terminalJson(workspace));
      return say(terminalText(`workspace ${workspace.name} added; give it a signing secret: albumflow secret add ${workspace.name}`));
    }
    case 'list': {
      args(rest, 0, 'no argument');
      const { workspaces } = await api.expect<{ workspaces: WorkspaceInfo[] }>('GET', '/admin/workspaces');
      if (values.json) return say(terminalJson(workspaces));
      const rows = workspaces.map((w) => [
        w.name,
        w.source,
        w.secrets.map((s) => s.id).join(', ') || '-',
        w.telegramBots.map((b) => b.name).join(', ') || '-',
        w.lineChannels.map((c) => c.name).join(', ') || '-',
      ]);
      return say(terminalLines(table(['workspace', 'source', 'secrets', 'telegram bots', 'line channels'], rows)));
    }
    case 'remove': {
      const [name] = args(rest, 1, '<workspace>');
      await api.expect('DELETE', `/admin/workspaces/${segment(name!)}`);
      return say(
        terminalText(
          `workspace ${name} removed: its webhooks answer 404; no token reaches it (one that reached it alone is revoked); its albums stay until they are erased`,
        ),
      );
    }
    case 'retention': {
      const [name, value] = args(rest, 2, '<workspace> <days|forever|default>');
      if (value === 'default') {
        await api.expect('DELETE', `/admin/workspaces/${segment(name!)}/retention`);
        return say(terminalText(`workspace ${name} keeps closed albums as RETENTION_DAYS says`));
      }
      const days = value === 'forever' ? 'forever' : Number(value);
      if (days !== 'forever' && !(Number.isFinite(days) && days > 0))
        throw misuse(`retention must be a number of days above 0, forever or default, not "${value}"`);
      await api.expect('PUT', `/admin/workspaces/${segment(name!)}/retention`, json({ days }));
      return say(
        terminalText(days === 'forever' ? `workspace ${name} keeps everything` : `workspace ${name} keeps closed albums ${days} days`),
      );
    }
    default:
      throw misuse(`unknown workspace command "${[action, ...rest].join(' ')}" (there are: workspace add, list, remove, retention)`);
  }
}

export async function secretCommand(api: Api, values: Values, [action, ...rest]: string[]): Promise<void> {
  switch (action) {
    case 'add': {
      const [workspace] = args(rest, 1, '<workspace>');
      const secret = values.secret ?? generated();
      const { id } = await api.expect<{ id: string }>('POST', `/admin/workspaces/${segment(workspace!)}/secrets`, json({ secret }));
      if (values.json) return say(terminalJson(values.secret ? { id } : { id, secret }));
      // A secret given on the command line is not printed again; a generated one is shown this once.
      return say(
        terminalText(values.secret ? `secret ${id} added to ${workspace}` : `secret ${id} added to ${workspace}: ${secret}`) +
          (values.secret ? '' : '\n(shown once: give it to the sender, which signs its webhooks with it)'),
      );
    }
    case 'retire': {
      const [workspace, id] = args(rest, 2, '<workspace> <secret id>');
      await api.expect('DELETE', `/admin/workspaces/${segment(workspace!)}/secrets/${segment(id!)}`);
      return say(terminalText(`secret ${id} of ${workspace} retired: webhooks signed with it are refused`));
    }
    default:
      throw misuse(`unknown secret command "${[action, ...rest].join(' ')}" (there are: secret add, retire)`);
  }
}

export async function tokenCommand(api: Api, values: Values, [action, ...rest]: string[]): Promise<void> {
  switch (action) {
    case 'create': {
      if (rest.length < 2) throw misuse('token create takes <name> <workspace>… ("*" for every workspace)');
      const [name, ...workspaces] = rest;
      const created = await api.expect<TokenInfo & { token: string }>(
        'POST',
        '/admin/tokens',
        json({ name, workspaces, ...(values['expires-at'] ? { expiresAt: values['expires-at'] } : {}) }),
      );
      if (values.json) return say(terminalJson(created));
      return say(
        terminalText(`token ${created.id} (${created.name}) reaches ${created.workspaces.join(', ')}: ${created.token}`) +
          '\n(shown once: albumflow keeps only its digest)',
      );
    }
    case 'list': {
      args(rest, 0, 'no argument');
      const { tokens } = await api.expect<{ tokens: TokenInfo[] }>('GET', '/admin/tokens');
      if (values.json) return say(terminalJson(tokens));
      const rows = tokens.map((t) => [t.id, t.name, t.workspaces.join(', '), t.source, t.expiresAt ?? '-', t.lastUsedAt ?? '-']);
      return say(terminalLines(table(['id', 'name', 'workspaces', 'source', 'expires', 'last used'], rows)));
    }
    case 'revoke': {
      const [id] = args(rest, 1, '<token id>');
      await api.expect('DELETE', `/admin/tokens/${segment(id!)}`);
      return say(terminalText(`token ${id} revoked, and every console session it opened`));
    }
    default:
      throw misuse(`unknown token command "${[action, ...rest].join(' ')}" (there are: token create, list, revoke)`);
  }
}

export async function auditCommand(api: Api, values: Values, rest: string[]): Promise<void> {
  args(rest, 0, 'no argument');
  const { entries } = await api.expect<{ entries: AuditInfo[] }>('GET', `/admin/audit?limit=${values.limit ?? '50'}`);
  if (values.json) return say(terminalJson(entries));
  if (entries.length === 0) return say('no change recorded');
  say(
    terminalLines(
      table(
        ['at', 'token', 'action', 'subject'],
        entries.map((e) => [e.at, e.tokenName, e.action, e.subject]),
      ),
    ),
  );
  say(plural(entries.length, 'change'));
}

/** The configuration of a `secrets` command, which works on PostgreSQL itself (DATABASE_URL). */
function secretsConfig(command: string, names: readonly string[] = []) {
  const config = cliConfig(['DATABASE_URL', 'DATA_DIR', 'ALBUMFLOW_SECRET_KEY', ...names]);
  if (!config.databaseUrl) {
    throw new CliError(
      `secrets ${command} works on PostgreSQL: set DATABASE_URL (for \`npm start\`, the PostgreSQL address its banner shows, with the password in DATA_DIR/postgres.password)`,
    );
  }
  return { config, databaseUrl: config.databaseUrl };
}

/** `secrets rekey`, on PostgreSQL itself (DATABASE_URL): the running albumflow is not asked. */
export async function rekeyCommand(): Promise<void> {
  const { config, databaseUrl } = secretsConfig('rekey');
  const pool = createPool(connectionConfig(databaseUrl), { max: 1, applicationName: 'albumflow-rekey' });
  try {
    const outcome = await rekey(pool, { secretKey: config.secretKey, dataDir: config.dataDir });
    say(terminalText(`${plural(outcome.resealed, 'stored secret')} sealed again under key ${outcome.keyId}; ${outcome.next}`));
  } catch (err) {
    throw new CliError(terminalText((err as Error).message));
  } finally {
    await pool.end();
  }
}

/**
 * `secrets rotate-link-key`, on PostgreSQL itself: a new key signs the `media_url` links from now on (every
 * process within a minute); the one before verifies the links it signed until they have expired.
 */
export async function rotateLinkKeyCommand(): Promise<void> {
  const { config, databaseUrl } = secretsConfig('rotate-link-key', ['MEDIA_URL_LIFETIME_S']);
  const file = secretKeyPath(config.dataDir);
  if (config.secretKey === undefined && !fs.existsSync(file)) {
    throw new CliError(terminalText(`there is no ${file}, and ALBUMFLOW_SECRET_KEY is unset: set the key albumflow runs with`));
  }
  const pool = createPool(connectionConfig(databaseUrl), { max: 1, applicationName: 'albumflow-rotate-link-key' });
  try {
    const { ring } = resolveSecretKey({ secretKey: config.secretKey, dataDir: config.dataDir });
    const outcome = await rotateLinkKey(pool, ring, config.media.urlLifetimeS);
    const retired = outcome.retired.map((key) => `; key ${key.id} verifies the links it signed until ${key.keptUntil.toISOString()}`);
    const dropped = outcome.dropped > 0 ? `; ${plural(outcome.dropped, 'expired key')} deleted` : '';
    say(terminalText(`link key ${outcome.id} signs new links (every process within a minute)${retired.join('')}${dropped}`));
  } catch (err) {
    throw new CliError(terminalText((err as Error).message));
  } finally {
    await pool.end();
  }
}
