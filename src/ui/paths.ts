// Every URL the console puts into a page, built from ids that senders chose: each segment is
// URL-encoded, so an id can neither leave its segment nor turn a link into another scheme.
import type { AlbumKey } from '../domain/types.js';
import type { OperatorAction } from '../db/actions.js';
import { consolePath, signInPath, signOutPath } from '../http/access/plugin.js';
import { mediaRoutePath } from '../media/links.js';

const e = encodeURIComponent;

/** `<provider>/<account>/<conversation>/<album>`, as every album route takes it after the workspace. */
function albumTail(key: AlbumKey): string {
  return [key.provider, key.accountId, key.conversationId, key.albumId].map(e).join('/');
}

export const consolePaths = {
  albums: consolePath,
  review: `${consolePath}/review`,
  tenants: `${consolePath}/tenants`,
  signIn: signInPath,
  signOut: signOutPath,
  assets: `${consolePath}/assets/`,
  album: (key: AlbumKey) => `${consolePath}/albums/${e(key.workspace)}/${albumTail(key)}`,
  /** The album page's erase form: a first post asks for confirmation, a confirmed one starts the erasure. */
  erase: (key: AlbumKey) => `${consolePath}/albums/${e(key.workspace)}/${albumTail(key)}/erase`,
  /** An erasure's progress page. */
  erasure: (workspace: string, id: string) => `${consolePath}/erasures/${e(workspace)}/${e(id)}`,
  albumVersion: (key: AlbumKey) => `${consolePath}/albums/${e(key.workspace)}/${albumTail(key)}/version`,
  media: mediaRoutePath,
  thumbnail: (workspace: string, sha256: string) => `${mediaRoutePath(workspace, sha256)}/thumbnail`,
  /** Outbound delivery's endpoints the token reaches, and one endpoint's page with its deliveries. */
  endpoints: `${consolePath}/endpoints`,
  endpoint: (id: string) => `${consolePath}/endpoints/${e(id)}`,
  /** The endpoint page's forms: turning it on or off, and sending one delivery again. */
  endpointSwitch: (id: string, to: 'enable' | 'disable') => `${consolePath}/endpoints/${e(id)}/${to}`,
  deliveryRetry: (endpointId: string, deliveryId: string) => `${consolePath}/endpoints/${e(endpointId)}/deliveries/${e(deliveryId)}/retry`,
  /** The operator actions (docs/api.md, "Operator actions"). */
  action: (key: AlbumKey, action: OperatorAction) => `/workspaces/${e(key.workspace)}/albums/${albumTail(key)}/actions/${action}`,
};

/** The album's workflow in the Temporal UI. */
export function temporalWorkflowUrl(uiUrl: string, namespace: string, workflowId: string): string {
  return `${uiUrl}/namespaces/${e(namespace)}/workflows/${e(workflowId)}`;
}
