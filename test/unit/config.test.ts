import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, configEnvNames, loadConfig } from '../../src/common/config.js';
import { projectRoot } from '../../src/common/paths.js';
import { tombstoneDays } from '../../src/db/purge.js';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.host).toBe('127.0.0.1');
    expect(config.databaseUrl).toBeUndefined();
    expect(config.temporal).toMatchObject({ address: undefined, namespace: 'default', taskQueue: 'albums' });
    expect(config.workspaceSecrets.size).toBe(0);
    expect(config.signatureToleranceS).toBe(300);
    expect(config.replayHorizonS).toBe(7 * 86_400);
    expect(config.maxBodyBytes).toBe(1048576);
    expect(config.album).toEqual({ quietPeriodMs: 2000, maxWaitMs: 30000, lateWindowMs: 86400000, lateItemPolicy: 'refresh' });
    expect(config.media.maxBytes).toBe(52428800);
    expect(config.media.allowPrivateNetworks).toBe(false);
    expect(config.media.dir.endsWith('.data/media')).toBe(true);
    expect(config.media.store).toBeUndefined();
    expect(config.media.urlLifetimeS).toBe(86400);
    expect(config.publicUrl).toBeUndefined();
    expect(config.notify).toEqual({ url: undefined, secret: undefined, allowPrivateNetworks: false, schedule: undefined, concurrency: 4 });
    expect(config.logFormat).toBeUndefined();
  });

  it('takes LOG_FORMAT json or pretty, and nothing else', () => {
    expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(ConfigError);
  });

  it('reads only the environment it is given', () => {
    process.env.QUIET_PERIOD_MS = '1234';
    try {
      expect(loadConfig({}).album.quietPeriodMs).toBe(2000);
    } finally {
      delete process.env.QUIET_PERIOD_MS;
    }
  });

  it('parses numbers, booleans and workspace secrets', () => {
    const config = loadConfig({
      PORT: '8080',
      MEDIA_ALLOW_PRIVATE_NETWORKS: 'true',
      LATE_ITEM_POLICY: 'review',
      WORKSPACE_SECRETS: '{"acme":["s1","s2"],"open":[]}',
    });
    expect(config.port).toBe(8080);
    expect(config.media.allowPrivateNetworks).toBe(true);
    expect(config.album.lateItemPolicy).toBe('review');
    expect(config.workspaceSecrets.get('acme')).toEqual(['s1', 's2']);
    expect(config.workspaceSecrets.get('open')).toEqual([]);
  });

  it('links the Temporal UI of the embedded dev server, or TEMPORAL_UI_URL, or none for another server', () => {
    expect(loadConfig({}).temporal.uiUrl).toBe('http://127.0.0.1:8233');
    expect(loadConfig({ TEMPORAL_UI_PORT: '9233' }).temporal.uiUrl).toBe('http://127.0.0.1:9233');
    expect(loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233' }).temporal.uiUrl).toBeUndefined();
    expect(loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233', TEMPORAL_UI_URL: 'https://temporal.example/' }).temporal.uiUrl).toBe(
      'https://temporal.example',
    );
    expect(() => loadConfig({ TEMPORAL_UI_URL: 'javascript:alert(1)' })).toThrow(/TEMPORAL_UI_URL/);
  });

  it('believes no proxy unless TRUST_PROXY names them, and takes no hop count', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.7' }).trustProxy).toEqual(['10.0.0.7']);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.1,fd00::/8,::1,loopback,uniquelocal' }).trustProxy).toEqual([
      '10.0.0.0/8',
      '192.168.1.1',
      'fd00::/8',
      '::1',
      'loopback',
      'uniquelocal',
    ]);
    for (const value of ['1', '2', 'yes', 'proxy.example', '10.0.0.0/33', '10.0.0.0/0', '::1/129', '10.0.0.1/8/8', '10.0.0.1,', '1.2.3']) {
      expect(() => loadConfig({ TRUST_PROXY: value }), value).toThrow(ConfigError);
      expect(() => loadConfig({ TRUST_PROXY: value }), value).toThrow(/TRUST_PROXY/);
    }
    expect(() => loadConfig({ TRUST_PROXY: '2' })).toThrow(/hop count/);
  });

  it('reads LINE_CHANNELS and the LINE API roots, and names a bad entry without its values', () => {
    const channelSecret = '0123456789abcdef0123456789abcdef';
    const channelAccessToken = 'a-channel-access-token-0123456789';
    const config = loadConfig({
      LINE_CHANNELS: JSON.stringify({ demo: { shop: { channelSecret, channelAccessToken } } }),
      LINE_DATA_API_ROOT: 'http://127.0.0.1:8082/',
    });
    expect(config.line.apiRoot).toBe('https://api.line.me');
    expect(config.line.dataApiRoot).toBe('http://127.0.0.1:8082');
    expect(config.line.channels.get('demo')?.get('shop')).toEqual({ name: 'shop', channelSecret, channelAccessToken });
    const bad = (channels: unknown) => () => loadConfig({ LINE_CHANNELS: JSON.stringify(channels) });
    expect(bad({ demo: { shop: { channelSecret: 'short', channelAccessToken } } })).toThrow(
      /LINE_CHANNELS\["demo"\]\["shop"\]\.channelSecret must be/,
    );
    expect(bad({ demo: { shop: { channelSecret, channelAccessToken: 'has space in it, and more' } } })).toThrow(
      /channelAccessToken must be/,
    );
    expect(bad({ demo: { shop: { channelSecret, channelAccessToken: 'has space in it, and more' } } })).not.toThrow(/has space/);
    expect(() => loadConfig({ LINE_CHANNELS: '[' })).toThrow(/LINE_CHANNELS must be JSON/);
    expect(() => loadConfig({ LINE_API_ROOT: 'ftp://x' })).toThrow(/LINE_API_ROOT/);
  });

  it('reads MEDIA_STORE as a bucket and a prefix, PUBLIC_URL without its trailing slash, and refuses what S3 cannot name', () => {
    expect(loadConfig({ MEDIA_STORE: 's3://albums' }).media.store).toEqual({ bucket: 'albums', prefix: '' });
    expect(loadConfig({ MEDIA_STORE: 's3://my.bucket-1/a/b/' }).media.store).toEqual({ bucket: 'my.bucket-1', prefix: 'a/b' });
    expect(loadConfig({ PUBLIC_URL: 'https://albums.example/', MEDIA_URL_LIFETIME_S: '600' })).toMatchObject({
      publicUrl: 'https://albums.example',
      media: { urlLifetimeS: 600 },
    });
    for (const value of ['albums', 'https://bucket/x', 's3://Upper', 's3://a', 's3://ok-bucket/a//b', 's3://ok-bucket/../x']) {
      expect(() => loadConfig({ MEDIA_STORE: value }), value).toThrow(/MEDIA_STORE/);
    }
    expect(() => loadConfig({ PUBLIC_URL: 'albums.example' })).toThrow(ConfigError);
    expect(() => loadConfig({ MEDIA_URL_LIFETIME_S: '0' })).toThrow(/MEDIA_URL_LIFETIME_S/);
  });

  it('takes REPLAY_HORIZON_S up to the 30 days an erased child stays tombstoned, and no further', () => {
    expect(loadConfig({ REPLAY_HORIZON_S: String(tombstoneDays * 86_400) }).replayHorizonS).toBe(tombstoneDays * 86_400);
    expect(() => loadConfig({ REPLAY_HORIZON_S: String(tombstoneDays * 86_400 + 1) })).toThrow(ConfigError);
    expect(() => loadConfig({ REPLAY_HORIZON_S: '0' })).toThrow(ConfigError);
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ NOTIFY_URL: '', NOTIFY_SECRET: '', DELIVERY_SCHEDULE: '' }).notify).toMatchObject({
      url: undefined,
      secret: undefined,
      schedule: undefined,
    });
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT/],
    [{ LATE_ITEM_POLICY: 'ignore' }, /LATE_ITEM_POLICY/],
    [{ NOTIFY_URL: 'ftp://example.com' }, /NOTIFY_URL/],
    [{ WORKSPACE_SECRETS: 'not json' }, /WORKSPACE_SECRETS must be JSON/],
    [{ WORKSPACE_SECRETS: '["a"]' }, /JSON object/],
    [{ WORKSPACE_SECRETS: '{"a":"secret"}' }, /WORKSPACE_SECRETS\["a"\]/],
    [{ WORKSPACE_SECRETS: '{"a":[""]}' }, /non-empty strings/],
  ])('rejects %j with a message naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe('the README', () => {
  it('lists every variable albumflow reads in its configuration table', () => {
    const readme = fs.readFileSync(path.join(projectRoot, 'README.md'), 'utf8');
    const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1));
    const rows = table.split('\n').filter((line) => line.startsWith('| `'));
    expect(configEnvNames.filter((name) => !rows.some((row) => row.includes(`\`${name}\``)))).toEqual([]);
  });
});
