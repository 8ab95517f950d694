import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/common/config.js';
import { adminTokenPath, AdminTokenError, loadOrCreateAdminToken } from '../../src/http/access/admin-token.js';
import { localPath } from '../../src/http/access/sign-in.js';
import { tokenDigest, tokenHash, TokenTable } from '../../src/tenants/tokens.js';
import { projectRoot } from '../../src/common/paths.js';

const alpha = 'alpha-token-0123456789';
const beta = 'beta-token-0123456789';

describe('API_TOKENS', () => {
  it('maps each token to its workspaces; unset means the admin token is generated', () => {
    expect(loadConfig({}).apiTokens).toBeUndefined();
    const config = loadConfig({ API_TOKENS: JSON.stringify({ [alpha]: ['demo', 'acme'], [beta]: ['*'] }) });
    expect(config.apiTokens).toEqual(
      new Map([
        [alpha, ['demo', 'acme']],
        [beta, ['*']],
      ]),
    );
  });

  it.each([
    ['not json', /not JSON/],
    ['["a"]', /JSON object mapping each token/],
    [JSON.stringify({ short: ['demo'] }), /token #1 must be 16 to 1024 characters/],
    [JSON.stringify({ [alpha]: ['demo'], 'has a space in it, so no': ['demo'] }), /token #2 must be/],
    [JSON.stringify({ [`${alpha}\u0007`]: ['demo'] }), /token #1 must be/],
    [JSON.stringify({ [alpha]: [] }), /token #1 must map to a non-empty list/],
    [JSON.stringify({ [alpha]: 'demo' }), /token #1 must map to a non-empty list/],
    [JSON.stringify({ [alpha]: [''] }), /token #1 must map to a non-empty list/],
    [JSON.stringify({ [alpha]: ['*', 'demo'] }), /token #1 lists "\*" beside other workspaces/],
  ])('refuses %s with a message that names the token by its place only', (value, message) => {
    expect(() => loadConfig({ API_TOKENS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ API_TOKENS: value })).toThrow(message);
    try {
      loadConfig({ API_TOKENS: value });
    } catch (err) {
      expect((err as Error).message).not.toContain(alpha);
    }
  });
});

describe('TokenTable', () => {
  const table = TokenTable.fromEnvironment(
    new Map([
      [alpha, ['demo']],
      [beta, ['*']],
    ]),
  );

  it('finds a presented token and nothing else, whatever its length', () => {
    expect(table.find(alpha)).toMatchObject({ hash: tokenHash(alpha), workspaces: new Set(['demo']) });
    expect(table.find(beta)?.workspaces).toBe('*');
    for (const presented of ['', alpha.slice(0, -1), `${alpha}x`, alpha.toUpperCase(), 'x'.repeat(10_000)]) {
      expect(table.find(presented)).toBeUndefined();
    }
  });

  it('names a token by a short hash that does not contain it', () => {
    expect(tokenHash(alpha)).toMatch(/^[0-9a-f]{12}$/);
    expect(table.byHash(tokenHash(alpha))?.digest).toEqual(tokenDigest(alpha));
  });
});

/** What a browser does with a Location header: the origin it leads to, or undefined when it is no valid header. */
function destination(location: string): string | undefined {
  if (!/^[\x21-\x7e]+$/.test(location)) return undefined;
  return new URL(location, 'https://albumflow.example').origin;
}

describe('where sign-in goes next', () => {
  it('keeps a same-site path of this server', () => {
    for (const next of ['/ui', '/metrics', '/ui/albums/demo/whatsapp/acc_1/conv%201/alb_1?x=1&y=%2F#top', '/', '/ui/review?q=a%2Fb']) {
      expect(localPath(next)).toBe(next);
    }
  });

  it.each([
    ['another host', '//evil.example/x'],
    ['another host, by backslash', '/\\evil.example'],
    ['a backslash', '/ui\\x'],
    ['a scheme', 'https://evil.example/'],
    ['a relative path', 'ui'],
    ['an empty segment', '/ui//x'],
    ['a control character', '/a\u0001b'],
    ['a line break', '/ui\r\nSet-Cookie: x=y'],
    ['a tab', '/\t/evil.example'],
    ['a space', '/ui x'],
    ['DEL', '/ui\u007f'],
    ['a character beyond ASCII', '/\u00e9t\u00e9'],
    ['a character beyond Latin-1', '/\u4e2d'],
    ['a lone surrogate', '/\ud800'],
    ['a bare percent sign', '/ui/%zz'],
    ['a cut percent escape', '/ui%2'],
    ['nothing', ''],
    ['a path too long', `/${'a'.repeat(2048)}`],
  ])('refuses %s for /ui', (_what, next) => {
    expect(localPath(next)).toBe('/ui');
  });

  it('answers, for any string, a valid Location header that stays on this origin (fast-check)', () => {
    const hostile = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.string({ unit: 'binary' }).map((s) => `/${s}`),
      fc.webPath(),
      fc.webUrl().map((url) => url.replace(/^https?:/, '')),
      fc
        .array(fc.constantFrom('/', '\\', '%', '2f', '5C', 'e', '.', ':', '@', '?', '#', '\u0000', '\u00a0', '\u2028'), { maxLength: 12 })
        .map((parts) => parts.join('')),
    );
    fc.assert(
      fc.property(hostile, (next) => {
        const location = localPath(next);
        expect(destination(location)).toBe('https://albumflow.example');
        expect(location.startsWith('/')).toBe(true);
        expect(location === next || location === '/ui').toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('token digests', () => {
  it('name a token in PostgreSQL; its first 12 hex digits are the short hash logs show', () => {
    const table = TokenTable.fromEnvironment(new Map([[alpha, ['demo']]]));
    expect(tokenDigest(alpha)).toHaveLength(32);
    expect(tokenDigest(alpha).toString('hex').slice(0, 12)).toBe(tokenHash(alpha));
    expect(table.byDigest(tokenDigest(alpha))?.hash).toBe(tokenHash(alpha));
    expect(table.byDigest(tokenDigest(beta))).toBeUndefined();
    expect(table.digests()).toEqual([tokenDigest(alpha)]);
  });
});

describe('the admin token file', () => {
  const dirs: string[] = [];
  const scratch = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-admin-'));
    dirs.push(dir);
    return path.join(dir, 'data');
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is generated once with mode 0600 and read back at every later start', () => {
    const dataDir = scratch();
    const first = loadOrCreateAdminToken(dataDir);
    expect(first).toMatchObject({ created: true, file: adminTokenPath(dataDir) });
    expect(first.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(fs.statSync(first.file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dataDir)).toEqual(['admin-token']);
    const second = loadOrCreateAdminToken(dataDir);
    expect(second).toEqual({ token: first.token, file: first.file, created: false });
    // A valid API_TOKENS entry, so the admin token is usable in one.
    expect(loadConfig({ API_TOKENS: JSON.stringify({ [first.token]: ['*'] }) }).apiTokens?.size).toBe(1);
  });

  it('is the same token for processes that start at once', { timeout: 60_000 }, async () => {
    const dataDir = scratch();
    const script = `import { loadOrCreateAdminToken } from './src/http/access/admin-token.ts';
      process.stdout.write(JSON.stringify(loadOrCreateAdminToken(process.argv[1])));`;
    const run = () =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, dataDir], { cwd: projectRoot });
    const results = (await Promise.all([run(), run(), run()])).map(
      ({ stdout }) => JSON.parse(stdout) as { token: string; created: boolean },
    );
    expect(new Set(results.map((r) => r.token)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  it('is never overwritten: a damaged file stops the start, a readable one is warned about', () => {
    const dataDir = scratch();
    fs.mkdirSync(dataDir);
    fs.writeFileSync(adminTokenPath(dataDir), 'not a token\n', { mode: 0o600 });
    expect(() => loadOrCreateAdminToken(dataDir)).toThrow(AdminTokenError);
    expect(() => loadOrCreateAdminToken(dataDir)).toThrow(/holds no valid token; delete it/);
    expect(fs.readFileSync(adminTokenPath(dataDir), 'utf8')).toBe('not a token\n');

    fs.writeFileSync(adminTokenPath(dataDir), `${alpha}\n`);
    fs.chmodSync(adminTokenPath(dataDir), 0o644);
    const loose = loadOrCreateAdminToken(dataDir);
    expect(loose).toMatchObject({ token: alpha, created: false });
    expect(loose.warning).toMatch(/mode 644.*chmod 600/);
  });
});
