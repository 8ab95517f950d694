import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { listDeliveries, recordNotification } from '../../src/db/deliveries.js';
import { withTransaction } from '../../src/db/transaction.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import { consolePaths } from '../../src/ui/paths.js';
import { deliveryTestbed, type Testbed } from '../harness/delivery.js';
import { deliveryApp, type DeliveryApp } from '../harness/delivery-app.js';
import { albumEvent, webhookRequest } from '../harness/events.js';
import { unique } from '../harness/random.js';
import { artifactsDir, launchBrowser, type Browser } from './browser.js';

// The console's endpoint pages in headless Chromium, on a delivery testbed: notifications are recorded as the
// album wiring records them and sent by an engine of the testbed to its receiver, which answers what a test
// says — here, at first, a 500 whose body holds a script.

const eventually = { timeout: 20_000, interval: 100 };
const hostileAnswer = '<script>alert("answer")</script><img src=x onerror=alert(2)>';

describe('the console’s endpoint pages in a browser', () => {
  const adminToken = unique('admin-token');
  const acmeToken = unique('acme-token');
  const globexToken = unique('globex-token');
  const acme = 'acme';
  let bed: Testbed;
  let surface: DeliveryApp;
  let base = '';
  let browser: Browser;
  let page: Page;
  const dialogs: string[] = [];
  const consoleErrors: string[] = [];
  let status = 500;
  let endpointId = '';
  const albumKey = { workspace: acme, provider: 'whatsapp', accountId: 'acc_1', conversationId: unique('conv'), albumId: 'trip' };

  beforeAll(async () => {
    bed = await deliveryTestbed({ DELIVERY_SCHEDULE: '0s' });
    surface = await deliveryApp(bed, {
      tokens: { [adminToken]: ['*'], [acmeToken]: [acme], [globexToken]: ['globex'] },
      workspaces: [acme, 'globex'],
    });
    await surface.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(surface.app.server.address() as AddressInfo).port}`;

    // An album the album page shows (stored through the webhook; no workflow runs for it here).
    const body = JSON.stringify(
      albumEvent({ conversationId: albumKey.conversationId, albumId: albumKey.albumId, messageId: 'm1', index: 0 }),
    );
    const { path: webhookPath, headers } = webhookRequest({ route: 'unifyport', workspace: acme, secret: 'delivery-app-secret', body });
    expect((await surface.app.inject({ method: 'POST', url: webhookPath, headers, payload: body })).statusCode).toBe(202);

    const added = await surface.app.inject({
      method: 'POST',
      url: `/workspaces/${acme}/endpoints`,
      headers: surface.as(acmeToken),
      payload: { url: bed.receiver.endpoint('shop', [], () => ({ status, body: hostileAnswer })), description: 'the <b>shop</b>' },
    });
    expect(added.statusCode).toBe(201);
    const created = added.json<{ id: string; secret: string }>();
    endpointId = created.id;
    bed.receiver.setSecrets('shop', [created.secret]);
    await bed.startEngine();
    const workflowId = albumWorkflowId(albumKey);
    await withTransaction(bed.pool, (db) =>
      recordNotification(db, {
        id: `${workflowId}/1`,
        workflowId,
        workspace: acme,
        type: 'album.ready',
        data: { album: { albumId: albumKey.albumId } },
        recordedAt: new Date(),
      }),
    );
    await vi.waitFor(
      async () => expect((await listDeliveries(bed.pool, endpointId, { state: 'failed', limit: 10 })).length).toBe(1),
      eventually,
    );

    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await surface?.close();
    await bed?.close();
  });

  const open = async (url: string) => (await page.goto(`${base}${url}`))!;

  async function signIn(token: string) {
    await open(consolePaths.signIn);
    await page.fill('input[name=token]', token);
    await page.click('button[type=submit]');
    await page.waitForURL(`${base}${consolePaths.albums}`);
  }

  it('lists a workspace’s endpoints with their backlog and failures, linked from the navigation', async () => {
    await signIn(acmeToken);
    await page.click('header nav a:text("Endpoints")');
    await page.waitForURL(`${base}${consolePaths.endpoints}`);
    const row = page.locator(`tr[data-endpoint="${endpointId}"]`);
    expect(await row.locator('[data-figure=failed]').textContent()).toBe('1');
    expect(await row.locator('[data-figure=backlog]').textContent()).toBe('0');
    expect(await row.locator('.badge').textContent()).toBe('enabled');
    expect(await row.locator('td.endpoint-url .muted').textContent()).toBe('the <b>shop</b>');
  });

  it('shows an endpoint’s failure with the receiver’s answer as text, and no dialog opens', async () => {
    consoleErrors.length = 0;
    const response = await open(consolePaths.endpoint(endpointId));
    expect(response.status()).toBe(200);
    expect(response.headers()['content-security-policy']).toContain("script-src 'self'");
    const failure = page.locator('section[aria-labelledby=failures] article.delivery');
    expect(await failure.count()).toBe(1);
    expect(await failure.locator('pre.answer').textContent()).toBe(hostileAnswer);
    expect(await failure.locator('table.attempts td.num').first().textContent()).toBe('500');
    expect(await page.locator('script:not([src]), img, b').count()).toBe(0);
    expect(dialogs).toEqual([]);
    expect(consoleErrors).toEqual([]);
    await page.screenshot({ path: path.join(artifactsDir, 'endpoint-page.png'), fullPage: true });
  });

  it('“Send again” delivers a failed delivery once the receiver answers', async () => {
    status = 200;
    await open(consolePaths.endpoint(endpointId));
    await page.click('section[aria-labelledby=failures] form.send-again button');
    await page.waitForURL(/\?done=/);
    expect(await page.locator('[role=status]').textContent()).toMatch(/is sent again now/);
    await vi.waitFor(() => expect(bed.receiver.received('shop')).toHaveLength(2), eventually);
    // Recorded as delivered once the receiver's answer came.
    const deliveryState = async () => {
      await open(consolePaths.endpoint(endpointId));
      return page.locator('section[aria-labelledby=deliveries] article.delivery').getAttribute('data-state');
    };
    await expect.poll(deliveryState, eventually).toBe('delivered');
    expect(await page.getByTestId('failed-count').textContent()).toMatch(/^0 /);
    expect(await page.locator('section[aria-labelledby=failures]').count()).toBe(0);
    const audit = await bed.pool.query<{ action: string }>(`SELECT action FROM admin_audit ORDER BY id`);
    expect(audit.rows.map((row) => row.action)).toEqual(['endpoint.add', 'delivery.retry']);
  });

  it('turns the endpoint off and on, saying why it is off', async () => {
    await open(consolePaths.endpoint(endpointId));
    await page.click('form.endpoint-switch button');
    await page.waitForURL(/\?done=/);
    expect(await page.getByTestId('endpoint-state').textContent()).toBe('disabled');
    expect(await page.getByTestId('disabled-because').textContent()).toContain('an operator turned it off');
    await page.click('form.endpoint-switch button');
    await page.waitForURL(/\?done=Endpoint%20enabled|\?done=Endpoint\+enabled/);
    expect(await page.getByTestId('endpoint-state').textContent()).toBe('enabled');
  });

  it('shows on the album page where each of its notifications went', async () => {
    await open(consolePaths.album(albumKey));
    const row = page.locator('table.deliveries tbody tr');
    expect(await row.count()).toBe(1);
    expect(await row.getAttribute('data-state')).toBe('delivered');
    expect(await row.locator('a').getAttribute('href')).toBe(consolePaths.endpoint(endpointId));
    expect(await row.locator('td').nth(3).textContent()).toBe('delivered');
  });

  it('keeps another workspace’s token from the endpoint (404) and its list, and shows a * token the same page', async () => {
    await signIn(globexToken);
    expect((await open(consolePaths.endpoint(endpointId))).status()).toBe(404);
    await open(consolePaths.endpoints);
    expect(await page.locator('tr[data-endpoint]').count()).toBe(0);
    await signIn(adminToken);
    expect((await open(consolePaths.endpoint(endpointId))).status()).toBe(200);
  });
});
