import fs from 'node:fs';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDownloadActivities } from '../../activities/download.js';
import type { DownloadInput } from '../../workflows/activity-types.js';
import { isPublicAddress, networkPolicy, type NetworkPolicy } from '../../src/common/network-guard.js';
import type { Config } from '../../src/common/config.js';
import type { Pool } from '../../src/db/pool.js';
import type { DownloadResult } from '../../src/domain/types.js';
import { storeAttachment as storeAttachmentRow } from '../harness/albums.js';
import { testConfig, testLogger, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { startMediaServer, type Handler, type MediaServer } from '../harness/servers/media.js';

// Attachment URLs aimed at the machine's own network, directly, through redirects and through names that
// resolve there. download.test.ts covers literal loopback, IPv4-mapped, metadata, private and CGNAT targets
// and a redirect to a private name with a fake resolver; this file adds the rest with the system resolver.

/** What an attacker wants to reach: a server on 127.0.0.1 that counts every request it gets. */
const listenOn = (host: string, handler: Handler): Promise<MediaServer> => startMediaServer({ host, fallback: handler });

const quietSdkLogger = new DefaultLogger('ERROR');

describe('attachment URLs aimed at loopback, private, link-local and metadata addresses', () => {
  const guarded = testConfig({ MEDIA_ALLOW_PRIVATE_NETWORKS: 'false' });
  const open = testConfig({ MEDIA_ALLOW_PRIVATE_NETWORKS: 'true', MEDIA_DIR: guarded.media.dir });
  let pool: Pool;
  let internal: MediaServer;
  /** Stands in for a public CDN: 127.0.0.2, reachable as `cdn.test` and permitted by the test policy only. */
  let cdn: MediaServer;
  let redirectTo = '';

  beforeAll(async () => {
    pool = testPool(guarded);
    internal = await listenOn('127.0.0.1', (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('internal secret'));
    cdn = await listenOn('127.0.0.2', (_req, res) => res.writeHead(302, { location: redirectTo }).end());
  });

  afterAll(async () => {
    await internal.close();
    await cdn.close();
    await pool.end();
    fs.rmSync(guarded.media.dir, { recursive: true, force: true });
  });

  async function storeAttachment(url: string): Promise<DownloadInput> {
    const key = { workspace: unique('ssrf'), provider: 'whatsapp', accountId: 'acc', conversationId: 'conv', messageId: unique('msg') };
    await storeAttachmentRow(pool, key, { url });
    return { attachments: [{ key, position: 0, retry: false }], finalAttempt: 1 };
  }

  /** One download on its final attempt, so a refusal and a DNS failure both end in a recorded status. */
  async function download(config: Config, url: string, network?: NetworkPolicy): Promise<DownloadResult> {
    const input = await storeAttachment(url);
    const { downloadAttachments } = createDownloadActivities({ pool, config, logger: testLogger(config) }, network ? { network } : {});
    const env = new MockActivityEnvironment({ attempt: 1 }, { logger: quietSdkLogger });
    const [result] = await env.run<[DownloadInput], DownloadResult[], typeof downloadAttachments>(downloadAttachments, input);
    return result!;
  }

  const loopbackForms = (port: number) => [
    `http://localhost:${port}/`,
    `http://LOCALHOST:${port}/`,
    `http://localhost.:${port}/`,
    `http://127.1:${port}/`,
    `http://0x7f000001:${port}/`,
    `http://017700000001:${port}/`,
    `http://0.0.0.0:${port}/`,
    `http://[::]:${port}/`,
    `http://[0:0:0:0:0:0:0:1]:${port}/`,
    `http://[::ffff:7f00:1]:${port}/`,
  ];

  it.each(loopbackForms(0).map((url, i) => [url.replace(':0/', ':<port>/'), i]))(
    'never connects to %s with the system resolver and MEDIA_ALLOW_PRIVATE_NETWORKS=false',
    async (_shown, i) => {
      const url = loopbackForms(internal.port)[i]!;
      const before = internal.totalHits();
      const result = await download(guarded, url);
      expect(result.status).toBe('failed');
      expect(internal.totalHits()).toBe(before);
    },
  );

  describe('through a redirect from a permitted host', () => {
    const cdnPolicy: NetworkPolicy = {
      resolve: (hostname) =>
        hostname === 'cdn.test' ? Promise.resolve([{ address: '127.0.0.2', family: 4 }]) : networkPolicy(false).resolve(hostname),
      permits: (address) => address === '127.0.0.2' || isPublicAddress(address),
    };

    it.each([
      ['a loopback name (localhost)', () => `http://localhost:${internal.port}/secret`, /loopback address/],
      ['the loopback address', () => `http://127.0.0.1:${internal.port}/secret`, /127\.0\.0\.1 is a loopback address/],
      ['a decimal loopback address', () => `http://2130706433:${internal.port}/secret`, /127\.0\.0\.1 is a loopback address/],
      ['IPv6 loopback', () => `http://[::1]:${internal.port}/secret`, /::1 is a loopback address/],
      [
        'the cloud metadata address',
        () => 'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
        /169\.254\.169\.254 is a linkLocal address/,
      ],
      ['the IPv6 cloud metadata address', () => 'http://[fd00:ec2::254]/latest/meta-data/', /uniqueLocal address/],
      ['a private range', () => 'http://192.168.1.1/admin', /192\.168\.1\.1 is a private address/],
      ['an IPv6 link-local address', () => 'http://[fe80::1]/', /linkLocal address/],
    ])('refuses %s after the redirect, without connecting', async (_name, target, message) => {
      redirectTo = target();
      const cdnHits = cdn.totalHits();
      const internalHits = internal.totalHits();
      const result = await download(guarded, `http://cdn.test:${cdn.port}/photo.jpg`, cdnPolicy);
      expect(result.status).toBe('failed');
      expect(result.error).toMatch(message);
      expect(cdn.totalHits()).toBe(cdnHits + 1);
      expect(internal.totalHits()).toBe(internalHits);
    });
  });

  it('fetches the same loopback URLs when MEDIA_ALLOW_PRIVATE_NETWORKS=true', async () => {
    const before = internal.totalHits();
    const direct = await download(open, `http://localhost:${internal.port}/`);
    redirectTo = `http://127.0.0.1:${internal.port}/secret`;
    const redirected = await download(open, `http://127.0.0.2:${cdn.port}/photo.jpg`);
    expect(direct).toMatchObject({ status: 'downloaded', bytes: 'internal secret'.length });
    expect(redirected).toMatchObject({ status: 'downloaded', bytes: 'internal secret'.length });
    expect(internal.totalHits()).toBe(before + 2);
  });
});
