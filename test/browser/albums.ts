// Albums sent through a stack's webhook, and their status read back from PostgreSQL.
import { expect } from 'vitest';
import { albumStatusFromDatabase, findAlbum } from '../../src/db/status.js';
import type { Pool } from '../../src/db/pool.js';
import { signatureHeader } from '../../src/common/signature.js';
import type { AlbumKey, AlbumView } from '../../src/domain/types.js';
import { eventually } from '../helpers/albums.js';
import { albumEvent, type AlbumEventOptions, type Stack } from '../helpers/stack.js';

export type TestChild = Omit<AlbumEventOptions, 'albumId' | 'conversationId' | 'accountId' | 'provider'>;

/** Where albums of one workspace are sent: a stack's own workspace, or another one its app accepts. */
export interface Inbox {
  workspace: string;
  pool: Pool;
  post(event: unknown): Promise<{ statusCode: number }>;
}

/**
 * A workspace of the stack's `WORKSPACE_SECRETS` other than its own (stacks sign for one workspace),
 * so that one database holds albums of several workspaces.
 */
export function workspaceInbox(stack: Pick<Stack, 'app' | 'pool'>, workspace: string, secret: string): Inbox {
  return {
    workspace,
    pool: stack.pool,
    async post(event) {
      const payload = JSON.stringify(event);
      const timestamp = String(Math.floor(Date.now() / 1000));
      return stack.app.inject({
        method: 'POST',
        url: `/webhooks/unifyport/${encodeURIComponent(workspace)}`,
        headers: {
          'content-type': 'application/json',
          'x-unifyport-timestamp': timestamp,
          'x-unifyport-signature': signatureHeader(secret, timestamp, payload),
        },
        payload,
      });
    },
  };
}

export interface TestAlbum {
  key: AlbumKey;
  /** Posts a child of this album (signed, through the webhook) and checks it was accepted. */
  send(child: TestChild): Promise<void>;
  status(): Promise<AlbumView | null>;
  /** The status once `check` passes on it. */
  until(check: (status: AlbumView) => void, timeoutMs?: number): Promise<AlbumView>;
}

export function testAlbum(inbox: Inbox, albumId: string, conversationId = `conv-${albumId}`): TestAlbum {
  const key: AlbumKey = { workspace: inbox.workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId, albumId };
  const status = async () => {
    const album = await findAlbum(inbox.pool, key);
    return album ? albumStatusFromDatabase(inbox.pool, album, key) : null;
  };
  return {
    key,
    async send(child) {
      const response = await inbox.post(albumEvent({ ...child, albumId, conversationId }));
      expect(response.statusCode).toBe(202);
    },
    status,
    until: (check, timeoutMs = 60_000) =>
      eventually(async () => {
        const current = await status();
        expect(current).not.toBeNull();
        check(current!);
        return current!;
      }, timeoutMs),
  };
}

/** Every attachment of the album reached an outcome (none is pending). */
export function settled(status: AlbumView): void {
  expect(status.media.pending).toBe(0);
}
