// The console's side of access (DESIGN.md §8). The access plugin authenticates the request (a
// bearer token or the console's session cookie) and sets `request.access`; these routes only ask
// it which workspaces the request may see. A request it did not set access for sees none.
import { HttpError } from '../http/errors.js';

export interface RequestAccess {
  /** The token's workspaces as `API_TOKENS` lists them; `["*"]` reaches every workspace. */
  workspaces: readonly string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the access plugin for a valid token or session; absent: no access. */
    access?: RequestAccess;
  }
}

/** The workspaces a request may see: a list, or `'all'`. */
export function reachableWorkspaces(access: RequestAccess): readonly string[] | 'all' {
  return access.workspaces.includes('*') ? 'all' : access.workspaces;
}

/** Refuses (401 / 403, as the status API does) unless the request may see `workspace`. */
export function requireWorkspace(access: RequestAccess | undefined, workspace: string): void {
  const signedIn = requireAccess(access);
  const reachable = reachableWorkspaces(signedIn);
  if (reachable !== 'all' && !reachable.includes(workspace)) {
    throw new HttpError(403, 'workspace_not_allowed', 'this token does not reach that workspace');
  }
}

/** Refuses with 401 unless the access plugin established who is asking. */
export function requireAccess(access: RequestAccess | undefined): RequestAccess {
  if (!access) throw new HttpError(401, 'missing_token', 'sign in, or send Authorization: Bearer <token>');
  return access;
}
