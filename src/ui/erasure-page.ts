// The erasure pages' models (docs/console.md, "Erasing an album"): the confirmation an album's erase form
// asks for, and an erasure's progress from its receipt. Pure: no I/O.
import type { ErasureReceipt } from '../db/erasures.js';
import { purgeCountLabels } from '../domain/lifetime.js';
import type { AlbumView } from '../domain/types.js';
import { consolePaths } from './paths.js';
import { bytes, type EraseConfirmPage, type ErasurePage } from './views.js';

/** The receipt's counts as the page names them. */
const countLabels = purgeCountLabels.map(([name, label]) => [name, `${label[0]!.toUpperCase()}${label.slice(1)}`] as const);

const subjectLabels: Array<[string, string]> = [
  ['workspace', 'Workspace'],
  ['provider', 'Provider'],
  ['accountId', 'Account'],
  ['conversationId', 'Conversation'],
  ['albumId', 'Album'],
  ['messageId', 'Message'],
];

export function eraseConfirmModel(album: AlbumView): EraseConfirmPage {
  return {
    key: album.key,
    children: album.children.length,
    attachments: album.children.reduce((sum, child) => sum + child.attachments.length, 0),
    eraseUrl: consolePaths.erase(album.key),
    albumUrl: consolePaths.album(album.key),
  };
}

export function erasurePageModel(receipt: ErasureReceipt): ErasurePage {
  const subject = (typeof receipt.subject === 'object' && receipt.subject !== null ? receipt.subject : {}) as Record<string, unknown>;
  const count = (name: string): number => (receipt.counts as Record<string, number | undefined>)[name] ?? 0;
  return {
    id: receipt.id,
    state: receipt.state,
    scope: receipt.scope,
    subject: subjectLabels
      .filter(([name]) => typeof subject[name] === 'string')
      .map(([name, label]) => ({ name: label, value: subject[name] as string })),
    requestedAt: receipt.requestedAt.toISOString(),
    requestedBy: receipt.requestedBy,
    finishedAt: receipt.finishedAt?.toISOString() ?? null,
    counts: countLabels.map(([name, label]) => ({
      name,
      label,
      value: name === 'mediaObjects' ? `${count(name)} (${bytes(count('mediaBytes'))})` : String(count(name)),
    })),
  };
}
