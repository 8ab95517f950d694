import { describe, expect, it } from 'vitest';
import { banner } from '../../src/process/banner.js';
import { loadConfig } from '../../src/common/config.js';

const urls = { http: 'http://127.0.0.1:3000', console: 'http://127.0.0.1:3000/ui', temporal: '127.0.0.1:7233' };
const bots = JSON.stringify({
  shop: { sales: { token: '7000000001:AAH-fake-bot-token-for-banner-tests', secretToken: 'secret-token-of-sales' } },
});

function lines(env: Record<string, string>): string[] {
  return banner(urls, loadConfig({ DATA_DIR: '/tmp/albumflow-banner', ...env })).split('\n');
}

describe('the banner of npm start', () => {
  it('names the UnifyPort webhook and the status URL of the first configured workspace', () => {
    const printed = lines({ WORKSPACE_SECRETS: JSON.stringify({ 'demo space': ['s'] }) });
    expect(printed).toContain('  webhook      POST http://127.0.0.1:3000/webhooks/unifyport/demo%20space');
    expect(printed.some((line) => line.includes('/workspaces/demo%20space/albums'))).toBe(true);
    expect(printed.some((line) => line.includes('none configured'))).toBe(false);
  });

  it('with Telegram bots alone, names their webhooks and their workspace in the status URL, and the UnifyPort webhook of a workspace added at runtime', () => {
    const printed = lines({ TELEGRAM_BOTS: bots });
    expect(printed.some((line) => line.includes('/webhooks/telegram/shop/sales'))).toBe(true);
    expect(printed.some((line) => line.includes('/workspaces/shop/albums'))).toBe(true);
    // shop has no signing secret: its UnifyPort webhooks get 404, so the line names none of the bots' workspaces.
    expect(printed).toContain(
      '  webhook      POST http://127.0.0.1:3000/webhooks/unifyport/<workspace>   (a workspace with a signing secret: npx albumflow secret add <workspace>)',
    );
    expect(printed.join('\n')).not.toContain('AAH-fake-bot-token');
  });

  it('with LINE channels alone, names their webhook URLs and their workspace in the status URL, and no secret', () => {
    const channelSecret = '0123456789abcdef0123456789abcdef';
    const channelAccessToken = 'line-access-token-for-banner-tests';
    const printed = lines({ LINE_CHANNELS: JSON.stringify({ shop: { 'main account': { channelSecret, channelAccessToken } } }) });
    expect(printed.some((line) => line.includes('LINE         POST http://127.0.0.1:3000/webhooks/line/shop/main%20account'))).toBe(true);
    expect(printed.some((line) => line.includes('/workspaces/shop/albums'))).toBe(true);
    expect(printed.some((line) => line.includes('/webhooks/unifyport/<workspace>   (a workspace with a signing secret'))).toBe(true);
    expect(printed.some((line) => line.includes('none configured'))).toBe(false);
    expect(printed.join('\n')).not.toContain(channelSecret);
    expect(printed.join('\n')).not.toContain(channelAccessToken);
  });

  it('without any workspace, says that every webhook gets 404 and how to configure one', () => {
    const printed = lines({});
    expect(printed).toContain(
      '  webhook      POST http://127.0.0.1:3000/webhooks/unifyport/<workspace>   (a workspace with a signing secret: npx albumflow secret add <workspace>)',
    );
    expect(printed.some((line) => line.includes('none configured in the environment: add one while it runs'))).toBe(true);
  });

  it('says where the embedded PostgreSQL keeps its data, outside DATA_DIR when it is kept elsewhere', () => {
    const database = 'postgresql://postgres@127.0.0.1:16000/albumflow';
    const inPlace = banner({ ...urls, database }, loadConfig({ DATA_DIR: '/tmp/albumflow-banner' }));
    expect(inPlace).toContain(
      `PostgreSQL        ${database} (embedded, data in /tmp/albumflow-banner/postgres, password in /tmp/albumflow-banner/postgres.password)`,
    );
    const outside = '/var/lib/albumflow/postgres/root-albumflow-.data-postgres-0123456789abcdef';
    const elsewhere = banner({ ...urls, database, databaseDir: outside }, loadConfig({ DATA_DIR: '/root/albumflow/.data' }));
    expect(elsewhere).toContain(`(embedded, data in ${outside}, password in /root/albumflow/.data/postgres.password)`);
  });
});
