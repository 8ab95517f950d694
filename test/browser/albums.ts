// Albums sent through the stack's webhook, and their status read back from PostgreSQL.
import { expect } from 'vitest';
import { albumStatusFromDatabase, findAlbum } from '../../src/db/status.js';
import type { AlbumKey, AlbumStatus } from '../../workflows/types.js';
import { eventually } from '../helpers/albums.js';
import { albumEvent, type AlbumEventOptions, type Stack } from '../helpers/stack.js';

export type TestChild = Omit<AlbumEventOptions, 'albumId' | 'conversationId' | 'accountId' | 'provider'>;

export interface TestAlbum {
  key: AlbumKey;
  /** Posts a child of this album (signed, through the stack's webhook) and checks it was accepted. */
  send(child: TestChild): Promise<void>;
  status(): Promise<AlbumStatus | null>;
  /** The status once `check` passes on it. */
  until(check: (status: AlbumStatus) => void, timeoutMs?: number): Promise<AlbumStatus>;
}

export function testAlbum(stack: Pick<Stack, 'workspace' | 'pool' | 'post'>, albumId: string, conversationId = `conv-${albumId}`): TestAlbum {
  const key: AlbumKey = { workspace: stack.workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId, albumId };
  const status = async () => {
    const album = await findAlbum(stack.pool, key);
    return album ? albumStatusFromDatabase(stack.pool, album, key) : null;
  };
  return {
    key,
    async send(child) {
      const response = await stack.post(albumEvent({ ...child, albumId, conversationId }));
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
export function settled(status: AlbumStatus): void {
  expect(status.media.pending).toBe(0);
}
