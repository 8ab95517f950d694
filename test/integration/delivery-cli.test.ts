import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { projectRoot } from '../../src/common/paths.js';
import { declareEnvironmentEndpoint } from '../../src/db/endpoints.js';
import { webhookId } from '../../src/delivery/wire.js';
import { runCli, type CliRun } from '../harness/cli.js';
import { deliveryTestbed, notificationIdOf, type Testbed } from '../harness/delivery.js';
import { deliveryApp, type DeliveryApp } from '../harness/delivery-app.js';
import { unique } from '../harness/random.js';

// albumflow endpoint, deliveries and events as users run them: each a process of its own against a running
// server, on a delivery testbed whose engine sends to its receiver.

const eventually = { timeout: 30_000, interval: 100 };
const acme = 'acme';
const acmeToken = unique('cli-acme');
const opsToken = unique('cli-ops');
/** What a receiver or a customer may write that a terminal would act on. */
const hostile = '\u001b[2J\u001b]0;owned\u0007';

let bed: Testbed;
let surface: DeliveryApp;
let url = '';
let status = 500;

beforeAll(async () => {
  bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s' });
  surface = await deliveryApp(bed, { tokens: { [acmeToken]: [acme], [opsToken]: ['*'] }, workspaces: [acme] });
  await surface.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(surface.app.server.address() as AddressInfo).port}`;
  await bed.startEngine();
});

afterAll(async () => {
  await surface?.close();
  await bed?.close();
});

function albumflow(args: string[], token = acmeToken): Promise<CliRun> {
  return runCli(args, { ALBUMFLOW_URL: url, ALBUMFLOW_TOKEN: token });
}

function ok(run: CliRun): string {
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return run.stdout;
}

// Each run is a Node process that compiles the CLI (about 2 CPU-seconds): on a busy machine, minutes in all.
describe('albumflow endpoint, deliveries and events', { timeout: 240_000 }, () => {
  it('adds an endpoint, shows it, turns it off and on, rotates its secret, lists its deliveries, replays and removes it', async () => {
    const hook = bed.receiver.endpoint('hook', [], () => ({ status, body: `no${hostile}` }));
    const added = ok(
      await albumflow([
        'endpoint',
        'add',
        acme,
        hook,
        '--types',
        'album.ready,album.updated',
        '--description',
        'shop\n\u202efake line',
        '--rate-limit',
        '5',
      ]),
    );
    const id = /^endpoint (ep_\w+) added to acme: /.exec(added)?.[1];
    expect(id).toBeDefined();
    const secret = /^secret: (whsec_\S+)$/m.exec(added)?.[1];
    expect(secret).toBeDefined();
    bed.receiver.setSecrets('hook', [secret!]);

    const shown = ok(await albumflow(['endpoint', 'show', acme, id!]));
    expect(shown).toContain(`url:            ${hook}`);
    expect(shown).toContain('types:          album.ready, album.updated');
    expect(shown).toContain('rate limit:     5 a second');
    // Escaped, never obeyed; and no secret.
    expect(shown).toContain('description:    shop\\n\\u202efake line');
    expect(shown).not.toContain('\u202e');
    expect(shown).not.toContain('whsec_');

    await bed.record({ workspace: acme, album: 'alb_a', seq: 1 });
    await vi.waitFor(
      async () =>
        expect(
          (
            await surface.app.inject({
              method: 'GET',
              url: `/workspaces/${acme}/endpoints/${id}/deliveries?state=failed`,
              headers: surface.as(acmeToken),
            })
          ).json<{ deliveries: unknown[] }>().deliveries,
        ).toHaveLength(1),
      eventually,
    );
    const deliveries = ok(await albumflow(['deliveries', acme, id!, '--state', 'failed']));
    expect(deliveries).toMatch(
      new RegExp(
        `\\d+\\s+${notificationIdOf({ workspace: acme, album: 'alb_a', seq: 1 })}\\s+album.ready\\s+failed\\s+1\\s+\\S+ HTTP 500: no\\\\x1b\\[2J`,
      ),
    );
    expect(deliveries).not.toContain('\u001b');
    const asJson = JSON.parse(ok(await albumflow(['deliveries', acme, id!, '--json']))) as { deliveries: Array<{ webhookId: string }> };
    expect(asJson.deliveries.map((d) => d.webhookId)).toEqual([webhookId(notificationIdOf({ workspace: acme, album: 'alb_a', seq: 1 }))]);

    expect(ok(await albumflow(['endpoint', 'disable', acme, id!]))).toBe(
      `endpoint ${id} disabled: its deliveries are held until it is enabled\n`,
    );
    const list = ok(await albumflow(['endpoint', 'list', acme]));
    expect(list).toMatch(new RegExp(`${id}\\s+acme\\s+\\S+\\s+album.ready, album.updated\\s+disabled \\(operator\\)\\s+0\\s+1`));
    expect(ok(await albumflow(['endpoint', 'enable', acme, id!]))).toMatch(/^endpoint \S+ enabled/);

    const rotated = ok(await albumflow(['endpoint', 'rotate', acme, id!]));
    const next = /^secret: (whsec_\S+)$/m.exec(rotated)?.[1];
    expect(next).toBeDefined();
    bed.receiver.setSecrets('hook', [secret!, next!]);

    status = 200;
    const replayed = ok(await albumflow(['endpoint', 'replay', acme, id!, '--since', new Date(Date.now() - 3_600_000).toISOString()]));
    expect(replayed).toBe(`1 delivery of ${id} due again: they go out in order, in the background\n`);
    await vi.waitFor(() => expect(bed.receiver.received('hook')).toHaveLength(2), eventually);
    expect(bed.receiver.received('hook')[1]!.verifiedBy).toEqual([0, 1]);

    // Another workspace's token, a refused field, a command line it cannot run.
    const refused = await albumflow(['endpoint', 'add', acme, 'http://10.0.0.1/x'], unique('nobody'));
    expect(refused.code).toBe(1);
    const badType = await albumflow(['endpoint', 'add', acme, hook, '--types', 'album.exploded']);
    expect(badType.code).toBe(1);
    expect(badType.stderr).toMatch(/^albumflow: 400 invalid_request: .*types/);
    const misuse = await albumflow(['endpoint', 'add', '*', hook]);
    expect(misuse.code).toBe(2);

    expect(ok(await albumflow(['endpoint', 'remove', acme, id!]))).toBe(`endpoint ${id} removed from acme, with its deliveries\n`);
    const gone = await albumflow(['endpoint', 'show', acme, id!]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('404 endpoint_not_found');
  });

  it('lets a * token see every endpoint and enable the environment endpoint as *', async () => {
    await declareEnvironmentEndpoint(bed.pool, 'https://ops.example/notify');
    await bed.pool.query(`UPDATE endpoints SET enabled = false, disabled_reason = 'gone', disabled_at = now() WHERE id = 'ep_environment'`);
    const list = ok(await albumflow(['endpoint', 'list', '*'], opsToken));
    expect(list).toMatch(/ep_environment\s+\* \(NOTIFY_URL\)\s+https:\/\/ops.example\/notify\s+all\s+disabled \(gone\)/);
    expect(ok(await albumflow(['endpoint', 'show', '*', 'ep_environment'], opsToken))).toContain('state:          disabled since ');
    expect(ok(await albumflow(['endpoint', 'enable', '*', 'ep_environment'], opsToken))).toMatch(/^endpoint ep_environment enabled/);
    const scoped = await albumflow(['endpoint', 'enable', '*', 'ep_environment']);
    expect(scoped.code).toBe(1);
    expect(scoped.stderr).toContain('403 workspace_not_allowed');
    await bed.pool.query(`DELETE FROM endpoints WHERE id = 'ep_environment'`);
  });

  it('prints the feed as lines of JSON, and --follow prints each event as it commits', async () => {
    await bed.record({ workspace: acme, album: 'alb_f', seq: 1 });
    const page = await albumflow(['events', acme, '--types', 'album.ready']);
    expect(page.code).toBe(0);
    const lines = page.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { cursor: string; data: { id: string } });
    expect(lines.at(-1)!.data.id).toBe(notificationIdOf({ workspace: acme, album: 'alb_f', seq: 1 }));
    const next = /^next: (\d+) /.exec(page.stderr)?.[1];
    expect(next).toBe(lines.at(-1)!.cursor);

    const follower = spawn(process.execPath, [path.join(projectRoot, 'bin/albumflow.js'), 'events', acme, '--after', next!, '--follow'], {
      env: { ...process.env, ALBUMFLOW_URL: url, ALBUMFLOW_TOKEN: acmeToken },
    });
    let out = '';
    follower.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    try {
      // Started and waiting on the server (an event that commits before its first read is its first read's).
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      await bed.record({ workspace: acme, album: 'alb_g', seq: 1, data: { caption: hostile } });
      await vi.waitFor(() => expect(out).toContain('\n'), eventually);
      const event = JSON.parse(out.split('\n')[0]!) as { data: { id: string; caption: string } };
      expect(event.data).toMatchObject({ id: notificationIdOf({ workspace: acme, album: 'alb_g', seq: 1 }), caption: hostile });
      expect(out).not.toContain('\u001b');
      await bed.record({ workspace: acme, album: 'alb_h', seq: 1 });
      await vi.waitFor(() => expect(out.trimEnd().split('\n')).toHaveLength(2), eventually);
      expect(follower.exitCode).toBeNull();
    } finally {
      follower.kill('SIGINT');
    }
  });
});
