// The bench's traffic: UnifyPort `message.received` events for albums of several children, in
// shuffled order, some redelivered, each child's attachment on the bench's media server or without a
// URL; or the same albums as a Telegram bot's or a LINE channel's webhook receives them (the events built
// by test/harness/events.ts). Deterministic for a seed; pure (no I/O, no clock).
import {
  lineEvent,
  recentMs,
  recentSeconds,
  telegramMessage,
  telegramUpdate,
  unifyportEvent,
  type LineBody,
} from '../test/harness/events.js';
import type { ChildRequest, Traffic, Unit } from '../test/harness/load.js';
import { seededRandom } from '../test/harness/random.js';
import type { MediaFile } from '../test/harness/servers/catalogue.js';

export interface AlbumShape {
  minChildren: number;
  maxChildren: number;
  /** Share of albums whose children carry `album.total` (the rest carry none, as Telegram sends them). */
  totalShare: number;
}

export interface WorkloadOptions {
  /** Makes every album and message id of the phase unique within the run. */
  idPrefix: string;
  seed: number;
  albums: AlbumShape;
  /** Share of requests that redeliver an event already sent (same id, same body, signed again). */
  redeliveryShare: number;
  /**
   * `stream`: children of a few albums interleaved one by one; `burst`: each unit is all the children
   * of one album, sent at the same instant in shuffled order.
   */
  pattern: 'stream' | 'burst';
  /** Albums interleaved at once in the `stream` pattern. */
  interleavedAlbums?: number;
  /** Stop creating albums after this many. */
  maxAlbums?: number;
  /** Each child's attachment is one of these files (drawn by weight; 0: never) at a URL of its own; unset: no URL. */
  media?: ServedMedia;
  /** Send the albums as Telegram Updates of this bot instead (no total; the albums' keys are known from the request). */
  telegram?: TelegramAlbums;
  /** Send the albums as a LINE channel's image sets instead (index and total; one event per request). */
  line?: LineAlbums;
}

/** Whose Telegram albums the workload makes: the key of each album is `<workspace>:telegram:<bot id>:<chat>:<album>`. */
export interface TelegramAlbums {
  workspace: string;
  botId: string;
}

/** Whose LINE image sets the workload makes: the key of each album is `<workspace>:line:<destination>:<user>:<set>`. */
export interface LineAlbums {
  workspace: string;
  /** The channel's bot user id, the `destination` of its webhook bodies. */
  destination: string;
}

/** The media server as the workload uses it: where it is and what it serves. */
export interface ServedMedia {
  baseUrl: string;
  files: MediaFile[];
  /** Each child's file with bytes of its own (the server's /unique/ path): no two children share a hash. */
  unique?: boolean;
}

interface OpenAlbum {
  pending: ChildRequest[];
}

function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

const sentAtBase = Date.UTC(2026, 8, 29, 10, 0, 0);

/** Where a child's attachment is served: a file of the media server's catalogue at a URL of its own. */
export interface ChildMedia {
  url: string;
  file: MediaFile;
}

/**
 * The event of one album child, with one attachment. Without media it carries no URL (the platform's
 * "too large" case), so no download runs; with media it names the file's type, size and URL, as a
 * platform's event does.
 */
function childEvent(input: {
  eventId: string;
  provider: string;
  conversationId: string;
  albumId: string;
  messageId: string;
  index: number;
  total: number | null;
  media: ChildMedia | null;
}): string {
  const album: Record<string, unknown> = { id: input.albumId, index: input.index };
  if (input.total !== null) album.total = input.total;
  const { media } = input;
  const attachment = media
    ? { type: media.file.kind, mime_type: media.file.mimeType, size: media.file.bytes, file_name: media.file.name, url: media.url }
    : { type: 'image', mime_type: 'image/jpeg', size: 180_000 + input.index, file_name: `photo-${input.index}.jpg` };
  return JSON.stringify(
    unifyportEvent({
      id: input.eventId,
      provider: input.provider,
      accountId: 'bench-account',
      conversationId: input.conversationId,
      message: {
        id: input.messageId,
        text: input.index === 0 ? `album ${input.albumId}` : undefined,
        sent_at: new Date(sentAtBase + input.index * 1000).toISOString(),
        attachments: [attachment],
        album,
      },
    }),
  );
}

/** A number of the phase's id prefix, below 100,000 (FNV-1a). */
function phaseNumber(idPrefix: string): number {
  let hash = 0x811c9dc5;
  for (const char of idPrefix) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  return hash % 100_000;
}

/**
 * A Telegram Update of one album item: a document over the cloud Bot API's 20 MB download limit, so it is
 * `unavailable` at once and no download reaches the network.
 */
function documentUpdate(input: { updateId: number; chatId: number; albumId: string; messageId: number; index: number }): string {
  return JSON.stringify(
    telegramUpdate(
      input.updateId,
      telegramMessage({
        messageId: input.messageId,
        chatId: input.chatId,
        date: recentSeconds(Math.floor(sentAtBase / 1000)) + input.index,
        mediaGroupId: input.albumId,
        document: {
          file_id: `${input.albumId}-${input.messageId}`,
          file_unique_id: `u-${input.albumId}-${input.messageId}`,
          file_name: `scan-${input.index}.pdf`,
          mime_type: 'application/pdf',
          file_size: 25 * 1024 * 1024,
        },
        caption: input.index === 0 ? `album ${input.albumId}` : undefined,
      }),
    ),
  );
}

/**
 * Produces the phase's units lazily. `next(false)` opens new albums as needed; `next(true)` only
 * finishes the albums already opened (so every album of a phase is sent whole), then returns null.
 */
export class Workload implements Traffic {
  private readonly random: () => number;
  private readonly open: OpenAlbum[] = [];
  private readonly redeliveries: Array<{ due: number; request: ChildRequest }> = [];
  private readonly recent: ChildRequest[] = [];
  private sent = 0;
  albumsCreated = 0;

  constructor(private readonly options: WorkloadOptions) {
    this.random = seededRandom(options.seed);
  }

  next(finishing: boolean): Unit | null {
    const redelivery = this.dueRedelivery(finishing);
    if (redelivery) return this.emit([redelivery]);
    if (this.options.pattern === 'burst') {
      if (finishing || !this.mayCreate()) return null;
      return this.emit(shuffle([...this.createAlbum().pending], this.random));
    }
    const width = this.options.interleavedAlbums ?? 8;
    while (!finishing && this.open.length < width && this.mayCreate()) this.open.push(this.createAlbum());
    if (this.open.length === 0) return null;
    const slot = Math.floor(this.random() * this.open.length);
    const album = this.open[slot]!;
    const child = album.pending.pop()!;
    if (album.pending.length === 0) this.open.splice(slot, 1);
    return this.emit([child]);
  }

  private mayCreate(): boolean {
    return this.options.maxAlbums === undefined || this.albumsCreated < this.options.maxAlbums;
  }

  private dueRedelivery(finishing: boolean): ChildRequest | null {
    const first = this.redeliveries[0];
    if (!first || (first.due > this.sent && !finishing)) return null;
    if (finishing) {
      this.redeliveries.length = 0;
      return null;
    }
    this.redeliveries.shift();
    return first.request;
  }

  private emit(unit: ChildRequest[]): Unit {
    for (const request of unit) {
      this.sent += 1;
      if (request.redelivery) continue;
      this.recent.push(request);
      if (this.recent.length > 64) this.recent.shift();
      if (this.random() < this.options.redeliveryShare) {
        const original = this.recent[Math.floor(this.random() * this.recent.length)]!;
        const due = this.sent + 1 + Math.floor(this.random() * 40);
        this.redeliveries.push({ due, request: { ...original, redelivery: true } });
        this.redeliveries.sort((a, b) => a.due - b.due);
      }
    }
    return unit;
  }

  /** A file drawn by weight, at a URL naming the child (so no two children share one). */
  private mediaFor(messageId: string): ChildMedia | null {
    const { media } = this.options;
    if (!media) return null;
    const totalWeight = media.files.reduce((sum, file) => sum + file.weight, 0);
    let draw = this.random() * totalWeight;
    const weighed = media.files.filter((candidate) => candidate.weight > 0);
    const file = weighed.find((candidate) => (draw -= candidate.weight) < 0) ?? weighed[weighed.length - 1]!;
    const folder = media.unique ? 'unique' : 'media';
    return { file, url: `${media.baseUrl}/${folder}/${encodeURIComponent(file.name)}?child=${encodeURIComponent(messageId)}` };
  }

  private createAlbum(): OpenAlbum {
    const { idPrefix, albums, telegram, line } = this.options;
    const number = this.albumsCreated++;
    const size = albums.minChildren + Math.floor(this.random() * (albums.maxChildren - albums.minChildren + 1));
    const hasTotal = this.random() < albums.totalShare;
    const albumId = `${idPrefix}-a${number}`;
    if (telegram) return this.telegramAlbum(telegram, number, albumId, size);
    if (line) return this.lineAlbum(line, number, albumId, size);
    const provider = hasTotal ? 'whatsapp' : 'telegram';
    const conversationId = `conv-${number % 50}`;
    const children: ChildRequest[] = [];
    for (let index = 0; index < size; index++) {
      const messageId = `${albumId}-m${index}`;
      children.push({
        body: childEvent({
          eventId: `evt-${messageId}`,
          provider,
          conversationId,
          albumId,
          messageId,
          index,
          total: hasTotal ? size : null,
          media: this.mediaFor(messageId),
        }),
        albumId,
        messageId,
        albumSize: size,
        albumHasTotal: hasTotal,
        redelivery: false,
        albumKey: null,
      });
    }
    return { pending: shuffle(children, this.random) };
  }

  /** The album in a chat of its own, message ids 1…size (a chat's ids grow); chats and update ids differ between phases. */
  private telegramAlbum({ workspace, botId }: TelegramAlbums, number: number, albumId: string, size: number): OpenAlbum {
    const chatId = phaseNumber(this.options.idPrefix) * 1_000_000 + number;
    const albumKey = [workspace, 'telegram', botId, String(chatId), albumId].map(encodeURIComponent).join(':');
    const children: ChildRequest[] = [];
    for (let index = 0; index < size; index++) {
      const messageId = index + 1;
      children.push({
        body: documentUpdate({ updateId: chatId * 100 + messageId, chatId, albumId, messageId, index }),
        albumId,
        messageId: String(messageId),
        albumSize: size,
        albumHasTotal: false,
        redelivery: false,
        albumKey,
      });
    }
    return { pending: shuffle(children, this.random) };
  }

  /**
   * The album as one person's LINE image set: each image its own webhook body of one event, with the set's
   * index (from 1) and total, as LINE's current apps send it; its content is fetched from the content API.
   */
  private lineAlbum({ workspace, destination }: LineAlbums, number: number, albumId: string, size: number): OpenAlbum {
    const userId = `U${phaseNumber(this.options.idPrefix)}x${number}`;
    const albumKey = [workspace, 'line', destination, userId, albumId].map(encodeURIComponent).join(':');
    const children: ChildRequest[] = [];
    for (let index = 0; index < size; index++) {
      const messageId = `${albumId}-m${index}`;
      const event = lineEvent({
        webhookEventId: `evt-${messageId}`,
        type: 'message',
        timestamp: recentMs(sentAtBase) + index * 40,
        source: { type: 'user', userId },
        message: {
          type: 'image',
          id: messageId,
          quoteToken: `q-${messageId}`,
          contentProvider: { type: 'line' },
          imageSet: { id: albumId, index: index + 1, total: size },
        },
      });
      children.push({
        body: JSON.stringify({ destination, events: [event] } satisfies LineBody),
        albumId,
        messageId,
        albumSize: size,
        albumHasTotal: true,
        redelivery: false,
        albumKey,
      });
    }
    return { pending: shuffle(children, this.random) };
  }
}
