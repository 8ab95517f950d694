import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/common/config.js';
import { base32 } from '../../src/delivery/base32.js';
import { deliveryConfig } from '../../src/delivery/config.js';
import { withMediaLinks } from '../../src/delivery/materialize.js';
import { defaultSchedule } from '../../src/delivery/schedule.js';
import { checkSecret, environmentSecrets, generateSecret, signedRequest, webhookId, WebhookSecretError } from '../../src/delivery/wire.js';
import { createMediaLinks } from '../../src/media/links.js';
import { fixedLinkKeys, testLinkKey } from '../harness/link-keys.js';

const at = new Date();
const message = {
  notificationId: 'album:demo:whatsapp:acc_1:conv_1:alb_1/1',
  type: 'album.ready',
  recordedAt: new Date('2026-12-03T12:00:00.123Z'),
  data: { album: { children: [] }, decision: { seq: 1 } },
};

describe('the Standard Webhooks wire', () => {
  it('signs a body that any Standard Webhooks receiver verifies, with every secret during a rotation', () => {
    const [current, previous] = [generateSecret(), generateSecret()];
    const { headers, body } = signedRequest(message, [current, previous], at);
    expect(headers['webhook-id']).toBe(webhookId(message.notificationId));
    expect(headers['webhook-timestamp']).toBe(String(Math.floor(at.getTime() / 1000)));
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
    for (const secret of [current, previous]) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(generateSecret()).verify(body, headers)).toThrow('No matching signature found');
    expect(JSON.parse(body)).toEqual({
      type: 'album.ready',
      timestamp: '2026-12-03T12:00:00.123Z',
      data: { id: message.notificationId, album: { children: [] }, decision: { seq: 1 } },
    });
  });

  it('gives each notification one header-safe webhook-id that never shows its id (fast-check)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), fc.string({ maxLength: 200 }), (a, b) => {
        const id = webhookId(a);
        expect(id).toMatch(/^msg_[a-z2-7]{32}$/);
        expect(webhookId(a)).toBe(id);
        if (a !== b) expect(webhookId(b)).not.toBe(id);
      }),
    );
  });

  it('makes whsec_ secrets of 32 bytes', () => {
    const secret = generateSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(checkSecret(secret, 'it')).toBe(secret);
    expect(generateSecret()).not.toBe(secret);
  });

  it('refuses a secret that is not whsec_, saying how to make one and never showing it', () => {
    for (const wrong of ['hunter2-hunter2-hunter2-hunter2', 'whsec_not base64!', `whsec_${Buffer.alloc(16).toString('base64')}`]) {
      let error: unknown;
      try {
        checkSecret(wrong, 'NOTIFY_SECRET');
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(WebhookSecretError);
      expect((error as Error).message).toMatch(/^NOTIFY_SECRET .*make one with: echo "whsec_\$\(openssl rand -base64 32\)"$/);
      expect((error as Error).message).not.toContain(wrong);
    }
  });

  it('reads NOTIFY_SECRET as one secret, or two while rotating', () => {
    const [a, b] = [generateSecret(), generateSecret()];
    expect(environmentSecrets(a)).toEqual([a]);
    expect(environmentSecrets(` ${a}  ${b} `)).toEqual([a, b]);
    expect(() => environmentSecrets(undefined)).toThrow(/NOTIFY_URL is set without NOTIFY_SECRET/);
    expect(() => environmentSecrets(`${a} nope`)).toThrow(/^NOTIFY_SECRET \(secret #2\) must be a Standard Webhooks secret/);
  });

  it('encodes base32 as RFC 4648 does, in lower case and without padding', () => {
    const vectors: Array<[string, string]> = [
      ['', ''],
      ['f', 'my'],
      ['fo', 'mzxq'],
      ['foo', 'mzxw6'],
      ['foob', 'mzxw6yq'],
      ['fooba', 'mzxw6ytb'],
      ['foobar', 'mzxw6ytboi'],
    ];
    for (const [text, encoded] of vectors) expect(base32(Buffer.from(text))).toBe(encoded);
  });
});

describe('delivery configuration', () => {
  /** The configuration src/common/config.ts reads from these variables. */
  const notifyOf = (env: Record<string, string>) => loadConfig(env).notify;

  it('has the documented defaults', () => {
    expect(deliveryConfig(notifyOf({}))).toEqual({
      schedule: defaultSchedule,
      concurrency: 4,
      allowPrivateNetworks: false,
      environment: undefined,
    });
  });

  it('reads its variables and the environment endpoint', () => {
    const secret = generateSecret();
    const config = deliveryConfig(
      notifyOf({
        DELIVERY_SCHEDULE: '0s,1s',
        DELIVERY_CONCURRENCY: '2',
        NOTIFY_ALLOW_PRIVATE_NETWORKS: 'true',
        NOTIFY_URL: 'https://ops.example/hook',
        NOTIFY_SECRET: secret,
      }),
    );
    expect(config).toEqual({
      schedule: [0, 1000],
      concurrency: 2,
      allowPrivateNetworks: true,
      environment: { url: 'https://ops.example/hook', secrets: [secret] },
    });
  });

  it('names the variable that is wrong', () => {
    expect(() => deliveryConfig(notifyOf({ DELIVERY_SCHEDULE: '1m' }))).toThrow(ConfigError);
    expect(() => deliveryConfig(notifyOf({ DELIVERY_SCHEDULE: '1m' }))).toThrow(/DELIVERY_SCHEDULE must start with 0s/);
    expect(() => notifyOf({ DELIVERY_CONCURRENCY: '0' })).toThrow(/DELIVERY_CONCURRENCY/);
    expect(() => deliveryConfig(notifyOf({ NOTIFY_URL: 'https://ops.example/hook', NOTIFY_SECRET: 'old-style-secret' }))).toThrow(
      /^invalid configuration: NOTIFY_SECRET must be/,
    );
  });
});

describe('media links minted at each attempt', () => {
  const links = createMediaLinks({ baseUrl: 'https://albums.example', lifetimeS: 3600, keys: fixedLinkKeys(testLinkKey(7)) });
  const sha256 = 'ab'.repeat(32);

  it('gives every downloaded attachment a signed media_url, wherever it sits, and changes nothing else', async () => {
    const data = {
      album: {
        children: [
          {
            messageId: 'm1',
            attachments: [
              { position: 0, status: 'downloaded', sha256 },
              { position: 1, status: 'failed', sha256: null },
            ],
          },
        ],
      },
      message: { message: { attachments: [{ position: 0, status: 'downloaded', sha256 }] } },
      decision: { seq: 1, childMessageIds: ['m1'] },
    };
    const before = structuredClone(data);
    const minted = (await withMediaLinks(links)(data, { workspace: 'demo', type: 'album.ready' })) as typeof data;
    expect(data).toEqual(before);
    const url = (attachment: object) => (attachment as { media_url?: string }).media_url;
    expect(url(minted.album.children[0]!.attachments[0]!)).toMatch(
      new RegExp(`^https://albums.example/workspaces/demo/media/${sha256}\\?expires=\\d+&sig=`),
    );
    expect(url(minted.album.children[0]!.attachments[1]!)).toBeUndefined();
    expect(url(minted.message.message.attachments[0]!)).toMatch(/^https:\/\/albums.example\//);
    expect(minted.decision).toEqual(data.decision);
  });
});
