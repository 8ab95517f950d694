import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/common/config.js';
import { createLogger } from '../../src/common/log.js';

const token = '7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
const bots = (value: unknown) => ({ TELEGRAM_BOTS: JSON.stringify(value) });

describe('TELEGRAM_BOTS and TELEGRAM_API_ROOT', () => {
  it('default to no bots and the cloud Bot API', () => {
    const { telegram } = loadConfig({});
    expect(telegram.apiRoot).toBe('https://api.telegram.org');
    expect(telegram.bots.size).toBe(0);
  });

  it('read each bot with the id before the colon of its token', () => {
    const { telegram } = loadConfig({
      ...bots({ demo: { shop: { token, secretToken: 'S3cret_token-1' }, news: { token: '42:x', secretToken: 'n' } }, empty: {} }),
      TELEGRAM_API_ROOT: 'http://127.0.0.1:8081/',
    });
    expect(telegram.apiRoot).toBe('http://127.0.0.1:8081');
    expect(telegram.bots.get('demo')?.get('shop')).toEqual({ name: 'shop', id: '7000000001', token, secretToken: 'S3cret_token-1' });
    expect(telegram.bots.get('demo')?.get('news')?.id).toBe('42');
    expect(telegram.bots.get('empty')?.size).toBe(0);
  });

  it.each([
    [{ TELEGRAM_BOTS: 'not json' }, /TELEGRAM_BOTS must be JSON/],
    [bots(['demo']), /TELEGRAM_BOTS must be JSON/],
    [bots({ demo: [] }), /TELEGRAM_BOTS\["demo"\] must be an object/],
    [bots({ demo: { '': { token, secretToken: 's' } } }), /empty name/],
    [bots({ demo: { shop: token } }), /TELEGRAM_BOTS\["demo"\]\["shop"\] must be \{ "token"/],
    [bots({ demo: { shop: { secretToken: 's' } } }), /\["shop"\]\.token must be a bot token/],
    [bots({ demo: { shop: { token: 'AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw', secretToken: 's' } } }), /\.token must be a bot token/],
    [bots({ demo: { shop: { token: `${token} `, secretToken: 's' } } }), /\.token must be a bot token/],
    [bots({ demo: { shop: { token } } }), /\.secretToken must be 1-256 characters/],
    [bots({ demo: { shop: { token, secretToken: 'has space' } } }), /\.secretToken must be 1-256 characters/],
    [bots({ demo: { shop: { token, secretToken: 'x'.repeat(257) } } }), /\.secretToken must be 1-256 characters/],
    [
      bots({ demo: { a: { token, secretToken: 's' }, b: { token, secretToken: 't' } } }),
      /\["b"\] and TELEGRAM_BOTS\["demo"\]\["a"\] are the same bot \(id 7000000001\)/,
    ],
    [{ TELEGRAM_API_ROOT: 'api.telegram.org' }, /TELEGRAM_API_ROOT/],
  ])('refuses %j with a message naming the entry', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never repeats a token or a secret token in its messages', () => {
    const secretPart = token.split(':')[1]!;
    for (const entry of [
      { token: `${secretPart}`, secretToken: 'ok' },
      { token, secretToken: `bad ${secretPart}` },
      { token: `${token}!`, secretToken: 'ok' },
    ]) {
      let message = '';
      try {
        loadConfig(bots({ demo: { shop: entry } }));
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/TELEGRAM_BOTS\["demo"\]\["shop"\]/);
      expect(message).not.toContain(secretPart);
    }
  });

  it('a logged bot, its secret token header or the configuration shows neither token', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ level: 'info', format: 'json', name: 'test', destination: sink });
    const config = loadConfig(bots({ demo: { shop: { token, secretToken: 'S3cret_token-1' } } }));
    const bot = config.telegram.bots.get('demo')!.get('shop')!;
    logger.info({ bot }, 'bot');
    logger.info(bot, 'bot itself');
    logger.info({ req: { headers: { 'x-telegram-bot-api-secret-token': 'S3cret_token-1' } } }, 'request');
    logger.info({ config }, 'configuration');
    expect(lines).toHaveLength(4);
    const text = lines.join('');
    expect(text).toContain('"name":"shop"');
    expect(text).not.toContain(token.split(':')[1]);
    expect(text).not.toContain('S3cret_token-1');
  });
});
