// An erasure removes every raw event and quarantined body of its scope (docs/design.md, "Data lifetime"),
// whatever the event's type and whichever schema stored it: events stored before they were linked to what
// they name (the database is upgraded under the test, migration 1766400000000 links them), events that
// name no child, an event naming several children, and bodies that could not be parsed — and nothing of
// another message or conversation.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrationsDir } from '../../src/common/paths.js';
import { migrate } from '../../src/db/migrate.js';
import { connectionConfig, connectionUrl, databaseName, withDatabase } from '../../src/db/pool.js';
import { eventually, workspaceInbox } from '../harness/albums.js';
import { lineHeaders, telegramHeaders } from '../harness/events.js';
import { unique } from '../harness/random.js';
import { startStack, type Stack } from '../harness/stack.js';

/** The migration that links events to what they name: the database starts just before it. */
const linksMigration = '1766400000000_event-links';

/** A database of the test's own, migrated up to just before `linksMigration`. */
async function preUpgradeDatabase(): Promise<string> {
  const template = connectionConfig(inject('templateDatabaseUrl'));
  const name = `${databaseName(template)}_${crypto.randomBytes(4).toString('hex')}`;
  const admin = new pg.Client(withDatabase(template, 'postgres'));
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  const url = connectionUrl(withDatabase(template, name));
  const before = fs
    .readdirSync(migrationsDir)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .findIndex((file) => file.startsWith(linksMigration));
  expect(before).toBeGreaterThan(0);
  await runner({
    databaseUrl: url,
    dir: migrationsDir,
    direction: 'up',
    count: before,
    migrationsTable: 'pgmigrations',
    checkOrder: true,
    singleTransaction: true,
    log: () => undefined,
  });
  return url;
}

describe('an erasure finds every raw event and quarantined body of its scope', () => {
  let stack: Stack;
  const workspace = unique('ws-erase');
  const secret = 'erase-secret';
  const token = unique('erase-token');
  const auth = { authorization: `Bearer ${token}` };
  const bot = { id: '4242', token: '4242:bot-token', secretToken: 'bot-secret-token' };
  const channel = { secret: crypto.randomBytes(16).toString('hex'), destination: unique('Ubot') };
  const conversation = unique('conv-person');
  const otherConversation = unique('conv-other');
  const chat = -1_009_876_543;
  const lineUser = unique('Uperson');
  const ids = {
    received1: unique('evt-m1'),
    updated1: unique('evt-m1-updated'),
    received2: unique('evt-m2'),
    conversationUpdated: unique('evt-conv'),
    otherConversation: unique('evt-other'),
  };

  beforeAll(async () => {
    const url = await preUpgradeDatabase();
    const db = new pg.Client(connectionConfig(url));
    await db.connect();
    try {
      // Rows as a database stored them before the upgrade: children, and raw events whose child_identity
      // is NULL (every event stored before the data-lifetime migration), each holding a caption.
      const unifyport = (id: string, type: string, data: Record<string, unknown>) =>
        JSON.stringify({ id, type, provider: 'whatsapp', account_id: 'acc_1', data });
      const message = (messageId: string, text: string, conversationId = conversation) => ({
        conversation: { id: conversationId },
        message: { id: messageId, text },
      });
      await db.query(
        `INSERT INTO messages (workspace, provider, account_id, conversation_id, message_id, caption, raw)
         VALUES ($1, 'whatsapp', 'acc_1', $2, 'm1', 'caption one', '{}'), ($1, 'whatsapp', 'acc_1', $2, 'm2', 'caption two', '{}'),
                ($1, 'whatsapp', 'acc_1', $3, 'm1', 'another person', '{}')`,
        [workspace, conversation, otherConversation],
      );
      const events: Array<[string, string, string, string]> = [
        ['unifyport', ids.received1, 'message.received', unifyport(ids.received1, 'message.received', message('m1', 'caption one'))],
        // A UnifyPort event of another type names the message too, and holds its new caption.
        ['unifyport', ids.updated1, 'message.updated', unifyport(ids.updated1, 'message.updated', message('m1', 'caption one, edited'))],
        ['unifyport', ids.received2, 'message.received', unifyport(ids.received2, 'message.received', message('m2', 'caption two'))],
        [
          'unifyport',
          ids.conversationUpdated,
          'conversation.updated',
          unifyport(ids.conversationUpdated, 'conversation.updated', { conversation: { id: conversation, title: 'a person' } }),
        ],
        [
          'unifyport',
          ids.otherConversation,
          'message.received',
          unifyport(ids.otherConversation, 'message.received', message('m1', 'another person', otherConversation)),
        ],
        // A Telegram update without content (a member joined), and a LINE follow: events naming no child.
        [
          'telegram',
          `${bot.id}:1`,
          'message',
          JSON.stringify({ update_id: 1, message: { message_id: 3, date: 1, chat: { id: chat, type: 'group' }, new_chat_members: [] } }),
        ],
        [
          'line',
          `${channel.destination}:old-follow`,
          'follow',
          JSON.stringify({ destination: channel.destination, type: 'follow', source: { type: 'user', userId: lineUser } }),
        ],
      ];
      for (const [source, eventId, type, raw] of events) {
        await db.query(`INSERT INTO events (workspace, source, event_id, type, raw, child_identity) VALUES ($1, $2, $3, $4, $5, NULL)`, [
          workspace,
          source,
          eventId,
          type,
          raw,
        ]);
      }
      // Bodies that could not be parsed: two name the conversation, one another.
      await db.query(
        `INSERT INTO quarantine (workspace, reason, detail, raw)
         VALUES ($1, 'invalid_json', '', convert_to($2, 'UTF8')), ($1, 'missing_identity', '', convert_to($3, 'UTF8')),
                ($1, 'invalid_json', '', convert_to($4, 'UTF8'))`,
        [
          workspace,
          `{"type":"message.received","data":{"conversation":{"id":"${conversation}"},"message":{"text":"cut off`,
          JSON.stringify({ type: 'message.received', data: { conversation: { id: conversation }, message: { text: 'no id' } } }),
          `{"data":{"conversation":{"id":"${otherConversation}"}`,
        ],
      );
    } finally {
      await db.end();
    }
    // The upgrade.
    // The upgrade applies the links migration first (and those after it).
    expect((await migrate(connectionConfig(url)))[0]).toBe(linksMigration);

    stack = await startStack({
      DATABASE_URL: url,
      WORKSPACE_SECRETS: JSON.stringify({ [workspace]: [secret] }),
      API_TOKENS: JSON.stringify({ [token]: [workspace] }),
      TELEGRAM_BOTS: JSON.stringify({ [workspace]: { shop: { token: bot.token, secretToken: bot.secretToken } } }),
      LINE_CHANNELS: JSON.stringify({
        [workspace]: { shop: { channelSecret: channel.secret, channelAccessToken: 'line-channel-access-token' } },
      }),
    });
  });

  afterAll(async () => {
    await stack?.close();
  });

  /** The erasure's receipt once done. */
  async function erase(path: string): Promise<Record<string, number>> {
    const response = await stack.app.inject({ method: 'DELETE', url: `/workspaces/${workspace}/${path}`, headers: auth });
    expect(response.statusCode, response.body).toBe(202);
    const { id } = response.json<{ id: string }>();
    const receipt = await eventually(async () => {
      const answer = await stack.app.inject({ method: 'GET', url: `/workspaces/${workspace}/erasures/${id}`, headers: auth });
      expect(answer.statusCode, answer.body).toBe(200);
      const body = answer.json<{ state: string; counts: Record<string, number> }>();
      expect(body.state).toBe('done');
      return body;
    }, 90_000);
    return receipt.counts;
  }

  const eventIds = async () =>
    (await stack.pool.query<{ event_id: string }>(`SELECT event_id FROM events WHERE workspace = $1 ORDER BY event_id`, [workspace])).rows
      .map((row) => row.event_id)
      .sort();
  const quarantined = async () =>
    (await stack.pool.query<{ raw: Buffer }>(`SELECT raw FROM quarantine WHERE workspace = $1 ORDER BY id`, [workspace])).rows.map((row) =>
      row.raw.toString('utf8'),
    );

  it('erasing a message removes the events that name it, and no event of another message', async () => {
    const counts = await erase(`messages/whatsapp/acc_1/${conversation}/m1`);
    expect(counts).toMatchObject({ messages: 1, events: 2, quarantine: 0 });
    const left = await eventIds();
    expect(left).not.toContain(ids.received1);
    expect(left).not.toContain(ids.updated1);
    for (const kept of [ids.received2, ids.conversationUpdated, ids.otherConversation]) expect(left).toContain(kept);
    expect(await quarantined()).toHaveLength(3);
  });

  it('erasing a conversation removes every event linked to it, those naming no child too, and the quarantined bodies naming it', async () => {
    // A UnifyPort event of another type, stored now, names the conversation and no child.
    const inbox = workspaceInbox(stack, workspace, secret);
    const typing = {
      id: unique('evt-typing'),
      type: 'conversation.typing',
      provider: 'whatsapp',
      account_id: 'acc_1',
      data: { conversation: { id: conversation } },
    };
    const posted = await inbox.post(typing);
    expect(posted.statusCode).toBe(202);

    const counts = await erase(`conversations/whatsapp/acc_1/${conversation}`);
    // m2 with its event; the conversation's events naming no child, old and new; two quarantined bodies.
    expect(counts).toMatchObject({ messages: 1, events: 3, quarantine: 2 });
    const left = await eventIds();
    for (const gone of [ids.received2, ids.conversationUpdated, typing.id]) expect(left).not.toContain(gone);
    expect(left).toContain(ids.otherConversation);
    expect(await quarantined()).toEqual([expect.stringContaining(otherConversation)]);
    const other = await stack.pool.query(`SELECT 1 FROM messages WHERE workspace = $1 AND conversation_id = $2`, [
      workspace,
      otherConversation,
    ]);
    expect(other.rowCount).toBe(1);
  });

  it('erasing a Telegram chat removes its updates without content, stored before the upgrade and after', async () => {
    const update = {
      update_id: 2,
      message: { message_id: 4, date: Math.floor(Date.now() / 1000), chat: { id: chat, type: 'group' }, left_chat_member: { id: 1 } },
    };
    const answer = await stack.app.inject({
      method: 'POST',
      url: `/webhooks/telegram/${workspace}/shop`,
      headers: telegramHeaders(bot.secretToken),
      payload: JSON.stringify(update),
    });
    expect([answer.statusCode, answer.body]).toEqual([200, '']);
    expect(await eventIds()).toEqual(expect.arrayContaining([`${bot.id}:1`, `${bot.id}:2`]));

    // A deletion in a business chat is linked to each message it names.
    const deletion = { update_id: 3, deleted_business_messages: { business_connection_id: 'bc', chat: { id: 77 }, message_ids: [5, 6] } };
    const deleted = await stack.app.inject({
      method: 'POST',
      url: `/webhooks/telegram/${workspace}/shop`,
      headers: telegramHeaders(bot.secretToken),
      payload: JSON.stringify(deletion),
    });
    expect([deleted.statusCode, deleted.body]).toEqual([200, '']);
    const links = await stack.pool.query<{ conversation_id: string; message_id: string }>(
      `SELECT l.conversation_id, l.message_id FROM event_links l JOIN events e ON e.id = l.event_pk
        WHERE e.workspace = $1 AND e.event_id = $2 ORDER BY l.message_id`,
      [workspace, `${bot.id}:3`],
    );
    expect(links.rows).toEqual([
      { conversation_id: 'bc:77', message_id: '5' },
      { conversation_id: 'bc:77', message_id: '6' },
    ]);

    const counts = await erase(`conversations/telegram/${bot.id}/${chat}`);
    expect(counts).toMatchObject({ messages: 0, events: 2 });
    expect(await eventIds()).toContain(`${bot.id}:3`);
    expect(await erase(`conversations/telegram/${bot.id}/bc:77`)).toMatchObject({ events: 1 });
    expect(await eventIds()).not.toContain(`${bot.id}:3`);
    expect(await eventIds()).not.toEqual(expect.arrayContaining([`${bot.id}:1`]));
    expect((await eventIds()).filter((id) => id.startsWith(`${bot.id}:`))).toEqual([]);
  });

  it('erasing a LINE chat removes its follow events, stored before the upgrade and after', async () => {
    const body = JSON.stringify({
      destination: channel.destination,
      events: [
        {
          type: 'follow',
          mode: 'active',
          webhookEventId: 'new-follow',
          timestamp: Date.now(),
          deliveryContext: { isRedelivery: false },
          source: { type: 'user', userId: lineUser },
          replyToken: 'r',
        },
      ],
    });
    const answer = await stack.app.inject({
      method: 'POST',
      url: `/webhooks/line/${workspace}/shop`,
      headers: lineHeaders(channel.secret, body),
      payload: body,
    });
    expect([answer.statusCode, answer.body]).toEqual([200, '']);

    const counts = await erase(`conversations/line/${channel.destination}/${lineUser}`);
    expect(counts).toMatchObject({ messages: 0, events: 2 });
    expect((await eventIds()).filter((id) => id.startsWith(`${channel.destination}:`))).toEqual([]);
  });
});
