// Tenants changed while two ingress processes take signed load: a workspace added through the CLI takes
// webhooks on both at once, its signing secret rotated mid-load loses no request, and a token revoked
// through the CLI is refused by both within 2 s (the registry's NOTIFY, with its reload every second as
// the backstop). Every request of the load is acknowledged.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../harness/cli.js';
import { albumEvent, unifyportHeaders } from '../harness/events.js';
import { LoadGenerator } from '../harness/load.js';
import { startProcessStack, type ProcessStack } from '../harness/stack.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('tenants changed under load on two ingress processes', () => {
  let stack: ProcessStack;
  const adminToken = crypto.randomBytes(24).toString('base64url');
  const workspace = `customer-${crypto.randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    stack = await startProcessStack({
      ingresses: 2,
      workers: 1,
      media: { bytes: 16 * 1024, durationMs: () => 50 },
      notifyDelayMs: () => 20,
      env: { API_TOKENS: JSON.stringify({ [adminToken]: ['*'] }) },
    });
  });

  afterAll(async () => {
    await stack?.teardown();
  });

  const cli = async (args: string[]) => {
    const run = await runCli(args, { ALBUMFLOW_URL: stack.ingressUrls[0], ALBUMFLOW_TOKEN: adminToken, DATABASE_URL: '' });
    expect([run.code, run.stderr], args.join(' ')).toEqual([0, '']);
    return run.stdout;
  };
  const signed = async (url: string, secret: string) => {
    const body = JSON.stringify(albumEvent({ albumId: `probe-${crypto.randomUUID()}`, messageId: crypto.randomUUID(), index: 0 }));
    const response = await fetch(`${url}/webhooks/unifyport/${workspace}`, {
      method: 'POST',
      headers: unifyportHeaders(secret, body),
      body,
    });
    return response.status;
  };
  const albums = async (url: string, token: string) =>
    (await fetch(`${url}/workspaces/${workspace}/albums`, { headers: { authorization: `Bearer ${token}` } })).status;
  const addSecret = async () => {
    const [, id, secret] = /^secret (\S+) added to \S+: (\S+)$/m.exec(await cli(['secret', 'add', workspace]))!;
    return { id: id!, secret: secret! };
  };

  it('adds a workspace, rotates its secret mid-load and revokes a token, and loses no request', async () => {
    await cli(['workspace', 'add', workspace]);
    const first = await addSecret();
    // Both ingresses take the new workspace's signed webhooks as soon as the CLI answered.
    expect(await Promise.all(stack.ingressUrls.map((url) => signed(url, first.secret)))).toEqual([202, 202]);

    const load = new LoadGenerator({
      workspace,
      secret: first.secret,
      targets: stack.ingressUrls,
      mediaUrl: (path) => stack.media.url(path),
      albumsPerSecond: 4,
      maxInFlight: 16,
    });
    load.phase = 'before the rotation';
    load.start();
    try {
      await pause(4_000);

      // Rotation as a sender does it: add the new secret, sign with it, retire the old one once nothing
      // signed with the old one is still unanswered.
      load.phase = 'rotation';
      const second = await addSecret();
      load.useSecret(second.secret);
      const switchedAt = Date.now();
      for (let waited = 0; waited < 10_000 && load.attempts.some((a) => a.at < switchedAt && a.status === 0); waited += 50) await pause(50);
      await cli(['secret', 'retire', workspace, first.id]);
      load.phase = 'after the rotation';
      expect(await Promise.all(stack.ingressUrls.map((url) => signed(url, first.secret)))).toEqual([401, 401]);

      // A token created and then revoked through the CLI: refused by both ingresses within 2 s.
      const created = await cli(['token', 'create', `${workspace} status`, workspace]);
      const [, tokenId, token] = /^token (\S+) [\s\S]*?: (\S+)$/m.exec(created)!;
      expect(await Promise.all(stack.ingressUrls.map((url) => albums(url, token!)))).toEqual([200, 200]);
      await cli(['token', 'revoke', tokenId!]);
      const revokedAt = Date.now();
      const refusedAfter = await Promise.all(
        stack.ingressUrls.map(async (url) => {
          while ((await albums(url, token!)) !== 401) {
            if (Date.now() - revokedAt > 10_000) return Infinity;
            await pause(25);
          }
          return Date.now() - revokedAt;
        }),
      );
      console.log(`revoked token refused after ${refusedAfter.join(' ms and ')} ms`);
      for (const ms of refusedAfter) expect(ms).toBeLessThan(2_000);

      await pause(3_000);
      load.stopGenerating();
      await load.drain(120_000);
    } finally {
      load.stop();
    }

    // No request of the load failed, in any phase: every one acknowledged on its first attempt.
    const failed = load.attempts.filter((attempt) => !attempt.acknowledged);
    expect(failed.map((attempt) => `${attempt.phase}: ${attempt.status}`)).toEqual([]);
    expect(load.unacknowledged()).toBe(0);
    const byPhase = new Map<string, number>();
    for (const attempt of load.attempts) byPhase.set(attempt.phase, (byPhase.get(attempt.phase) ?? 0) + 1);
    console.log(`requests by phase: ${[...byPhase].map(([phase, n]) => `${phase} ${n}`).join(', ')}`);
    expect(byPhase.get('after the rotation')).toBeGreaterThan(0);
    expect(byPhase.get('before the rotation')).toBeGreaterThan(0);
  });
});
