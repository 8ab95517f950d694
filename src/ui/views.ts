// Server-rendered pages. Eta escapes every `<%= %>` interpolation (autoEscape is its default and
// is set here explicitly); templates use raw output `<%~ %>` only for what another template
// rendered (layout bodies and includes), and a unit test holds them to that.
import { byteSize } from '../domain/byte-size.js';
import path from 'node:path';
import { Eta } from 'eta';
import { projectRoot } from '../common/paths.js';
import type { AlbumListRow } from '../db/status.js';
import type { WorkspaceUsage } from '../db/usage.js';
import type { AlbumKey, AlbumPhase } from '../domain/types.js';
import type { ErasureSubject } from '../domain/lifetime.js';
import { reviewReasonText, triggerText, type AlbumPageModel } from './album-page.js';
import { consolePaths } from './paths.js';
import type { AuditInfo, TokenInfo, WorkspaceInfo } from '../tenants/schemas.js';
import type { DeliveryInfo, EndpointInfo } from '../http/endpoints.js';
import type { EndpointDisabledReason } from '../domain/endpoint-state.js';

export const templatesDir = path.join(projectRoot, 'src/ui/templates');

const eta = new Eta({ views: templatesDir, autoEscape: true, cache: true, autoTrim: [false, 'nl'] });

/** A time as people read it, in UTC. */
function time(iso: string | null): string {
  return iso === null ? '—' : iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
}

export function bytes(value: number | null): string {
  return value === null ? '' : byteSize(value);
}

/** How long ago a time was, as people say it (`40 s ago`, `3 h ago`), as of the rendering. */
function ago(iso: string): string {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (seconds < 120) return `${seconds} s ago`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} days ago`;
}

const helpers = { paths: consolePaths, time, ago, bytes, reviewReasonText, triggerText };

interface PageFrame {
  title: string;
  /** The signed-in pages show navigation and a sign-out button. */
  signedIn: boolean;
  /** Seconds after which the browser loads the page again (no script needed); none when absent. */
  refreshSeconds?: number;
}

export interface AlbumListFilters {
  workspace: string;
  provider: string;
  state: AlbumPhase | '';
  review: 'yes' | 'no' | '';
  q: string;
}

export interface AlbumListPage {
  heading: string;
  /** The review queue has no review filter of its own. */
  reviewQueue: boolean;
  filters: AlbumListFilters;
  workspaces: readonly string[];
  albums: readonly AlbumListRow[];
  /** The next (older) page, filters kept; null on the last page. */
  olderUrl: string | null;
  /**
   * What the workspaces in view keep (the one chosen, else every one the token reaches that has rows), as
   * last read (`at`, ISO); null on the review queue, and `unavailable` when it could not be read.
   */
  usage: { workspaces: readonly WorkspaceUsage[]; at: string } | 'unavailable' | null;
  /** Media objects the store did not delete, set aside (shown to a token that reaches every workspace); 0 when none. */
  mediaDeleteFailures: number;
}

export interface ErrorPage {
  status: number;
  message: string;
}

/** The tenants page: what the admin API lists, the forms' addresses, and the outcome of the last change. */
export interface TenantsPage {
  workspaces: WorkspaceInfo[];
  tokens: TokenInfo[];
  audit: AuditInfo[];
  paths: Record<string, string | ((...names: string[]) => string)>;
  message: string | null;
  error: string | null;
  /** A token just created: shown on this answer only. */
  createdToken: { name: string; token: string } | null;
}

/** The confirmation an album's erase form asks for before anything is erased. */
export interface EraseConfirmPage {
  key: AlbumKey;
  children: number;
  attachments: number;
  /** Where the confirmed form posts. */
  eraseUrl: string;
  albumUrl: string;
}

/** An erasure's progress: its receipt, with the counts as people read them. */
export interface ErasurePage {
  id: string;
  state: 'running' | 'done';
  scope: ErasureSubject['scope'];
  /** The ids the erasure named (workspace, provider, account, conversation, album or message). */
  subject: Array<{ name: string; value: string }>;
  requestedAt: string;
  requestedBy: string;
  finishedAt: string | null;
  counts: Array<{ name: string; label: string; value: string }>;
}

/** The outbound endpoints a token sees, of the workspace chosen or of all. */
export interface EndpointsPage {
  endpoints: EndpointInfo[];
  /** The workspaces that have an endpoint, for the filter. */
  workspaces: readonly string[];
  /** The one chosen; '' for all. */
  workspace: string;
  disabledReasonText: Record<EndpointDisabledReason, string>;
}

/** Which of an endpoint's deliveries its page lists ('' for all). */
export type DeliveryFilter = '' | 'pending' | 'failed' | 'held' | 'delivered';

/** One endpoint: its state, its failed deliveries with their answers, and its deliveries as filtered. */
export interface EndpointPage {
  endpoint: EndpointInfo;
  /** Why it is off; null while it is on. */
  disabledBecause: string | null;
  failed: DeliveryInfo[];
  deliveries: DeliveryInfo[];
  filter: DeliveryFilter;
  /** The next (older) page of the list; null on the last. */
  olderUrl: string | null;
  /** What the last form did. */
  message: string | null;
}

interface Pages {
  endpoints: EndpointsPage;
  endpoint: EndpointPage;
  erase: EraseConfirmPage;
  erasure: ErasurePage;
  tenants: TenantsPage;
  albums: AlbumListPage;
  album: AlbumPageModel;
  error: ErrorPage;
}

export function renderPage<P extends keyof Pages>(page: P, frame: PageFrame, data: Pages[P]): string {
  return eta.render(page, { ...frame, page: data, h: helpers });
}
