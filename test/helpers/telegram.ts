import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseUpdate } from '../../src/ingest/telegram.js';
import { projectRoot } from '../../src/common/paths.js';
import type { FakeBotApi, FakeFile } from './fake-bot-api.js';

/** A Telegram Update as the fixtures hold it. */
export type Update = Record<string, unknown> & { update_id: number };

/** The Updates of test/fixtures/telegram/<name>.json (one Update or a list), in order. */
export function telegramFixture(name: string): Update[] {
  const parsed = JSON.parse(fs.readFileSync(path.join(projectRoot, 'test/fixtures/telegram', `${name}.json`), 'utf8')) as Update | Update[];
  return Array.isArray(parsed) ? parsed : [parsed];
}

/** The Message an Update carries (`message`, `channel_post`, `edited_message`, …). */
export function messageOf(update: Update): Record<string, unknown> & { message_id: number; chat: { id: number }; media_group_id?: string } {
  const key = Object.keys(update).find((name) => name !== 'update_id')!;
  return update[key] as ReturnType<typeof messageOf>;
}

type Message = ReturnType<typeof messageOf>;

/** Gives every file id and file unique id under `value` the suffix. */
function renameFiles(value: unknown, suffix: string): void {
  if (Array.isArray(value)) for (const item of value) renameFiles(item, suffix);
  else if (typeof value === 'object' && value !== null) {
    const object = value as Record<string, unknown>;
    for (const [key, child] of Object.entries(object)) {
      if ((key === 'file_id' || key === 'file_unique_id') && typeof child === 'string') object[key] = `${child}-${suffix}`;
      else renameFiles(child, suffix);
    }
  }
}

/**
 * Other Updates of the same shape: update_id and message_id moved by `offset` and other files (so they
 * are new children, not redeliveries of the fixture's), then each Message changed by `change`.
 */
export function variant(updates: readonly Update[], offset: number, change: (message: Message) => void = () => {}): Update[] {
  return updates.map((update) => {
    const copy = structuredClone(update);
    copy.update_id += offset;
    messageOf(copy).message_id += offset;
    renameFiles(messageOf(copy), `v${offset}`);
    change(messageOf(copy));
    return copy;
  });
}

/** The `edited_message` Update (update_id moved by `offset`) that changes the Message of `update` as `change` does. */
export function editOf(update: Update, offset: number, change: (message: Message) => void): Update {
  const message = structuredClone(messageOf(update));
  change(message);
  return { update_id: update.update_id + offset, edited_message: message };
}

/** The file id albumflow keeps for an Update's media (the largest photo size, or the other media), as its parser picks it. */
export function fileIdOf(update: Update): string {
  const parsed = parseUpdate('ws', '1', Buffer.from(JSON.stringify(update)));
  const file = parsed.kind === 'child' || parsed.kind === 'edit' ? parsed.child.attachments[0]?.telegramFile : undefined;
  if (!file) throw new Error(`update ${update.update_id} carries no media`);
  return file.fileId;
}

/** Bytes standing for the file, different for every file id. */
export function fileContent(fileId: string): Buffer {
  return crypto.createHash('sha256').update(fileId).digest();
}

/** Makes the fake Bot API serve the media of these Updates to the bot. */
export function serveFiles(api: FakeBotApi, token: string, updates: readonly Update[], file: Partial<FakeFile> = {}): void {
  api.addBot(token);
  for (const update of updates) {
    const fileId = fileIdOf(update);
    api.addFile(token, fileId, { content: fileContent(fileId), ...file });
  }
}
