// Endpoint management as the API and the console ask for it (docs/api.md, "Endpoints"): every change checked
// (endpoints.ts), recorded in the audit with the caller's token name in the transaction that makes it, and
// refused with the error a client sees: 400 naming the field, 404 for an endpoint outside the caller's
// scope (another workspace's answers as if there were none), 409 `read_only` for what the environment
// endpoint does not allow.
import { HttpError } from '../common/http-error.js';
import {
  endpointCounts,
  listDeliveries,
  noDeliveries,
  replaySince,
  retryDelivery,
  type DeliveryState,
  type DeliveryView,
  type EndpointCounts,
} from '../db/deliveries.js';
import { getEndpoint, listEndpoints, listEveryEndpoint, type StoredEndpoint } from '../db/endpoints.js';
import type { Pool, Queryable } from '../db/pool.js';
import { auditedChange } from '../db/tenants.js';
import {
  addEndpoint,
  changeEndpoint,
  EndpointInputError,
  EndpointReadOnlyError,
  newEndpointId,
  removeEndpoint,
  rotateSecret,
  secretOverlapMs,
  type EndpointDeps,
  type EndpointInput,
  type EndpointPatch,
} from './endpoints.js';

/** Which endpoints a caller may address, by their workspace (null: the environment endpoint). */
export type EndpointScope = (workspace: string | null) => boolean;

/** A workspace's own endpoints: what any token that reaches the workspace manages. */
export const workspaceScope =
  (workspace: string): EndpointScope =>
  (owner) =>
    owner === workspace;

/** Every endpoint, the environment's too: a `*` token's. */
export const everyEndpoint: EndpointScope = () => true;

/** The token a change is audited under (its name and short hash; never the token). */
export interface Caller {
  tokenName: string;
  tokenHash: string;
}

/** An endpoint with what it has yet to deliver. */
export type EndpointState = StoredEndpoint & EndpointCounts;

export interface DeliveryPage {
  deliveries: DeliveryView[];
  /** Pass as `before` for the next (older) page; null on the last. */
  next: string | null;
}

export interface EndpointManagerOptions {
  pool: Pool;
  deps: EndpointDeps;
  /** Whether albumflow knows the workspace (an endpoint is added only to one it knows). */
  knows: (workspace: string) => Promise<boolean>;
}

const notFound = () => new HttpError(404, 'endpoint_not_found', 'no endpoint with this id here');

/** What a change is refused for, as the client sees it; anything else goes on as it is (a 500). */
function refusal(err: unknown): unknown {
  if (err instanceof EndpointInputError) return new HttpError(400, 'invalid_endpoint', err.message);
  if (err instanceof EndpointReadOnlyError) return new HttpError(409, 'read_only', err.message);
  return err;
}

/** Where an endpoint sends, for the audit: the URL's origin only (its path or query may hold a token). */
function origin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'an invalid URL';
  }
}

function subjectOf(endpoint: Pick<StoredEndpoint, 'id' | 'workspace'>): string {
  return endpoint.workspace === null
    ? `endpoint ${endpoint.id} (the environment's)`
    : `endpoint ${endpoint.id} of workspace ${endpoint.workspace}`;
}

const changedFields = (patch: EndpointPatch) =>
  (['url', 'types', 'description', 'rateLimit'] as const).filter((field) => patch[field] !== undefined);

export type EndpointManager = ReturnType<typeof endpointManager>;

export function endpointManager({ pool, deps, knows }: EndpointManagerOptions) {
  async function withCounts(db: Queryable, endpoints: StoredEndpoint[]): Promise<EndpointState[]> {
    const counts = await endpointCounts(
      db,
      endpoints.map((endpoint) => endpoint.id),
    );
    return endpoints.map((endpoint) => ({ ...endpoint, ...(counts.get(endpoint.id) ?? noDeliveries) }));
  }

  /** The endpoint when the scope reaches it; 404 otherwise, as for none. */
  async function find(scope: EndpointScope, id: string): Promise<StoredEndpoint> {
    const endpoint = await getEndpoint(pool, id);
    if (!endpoint || !scope(endpoint.workspace)) throw notFound();
    return endpoint;
  }

  async function get(scope: EndpointScope, id: string): Promise<EndpointState> {
    const [endpoint] = await withCounts(pool, [await find(scope, id)]);
    return endpoint!;
  }

  /** Runs the change audited; undefined from `work` (the endpoint went meanwhile) is a 404. */
  async function audited<T>(caller: Caller, action: string, subject: string, work: (db: Queryable) => Promise<T | undefined>): Promise<T> {
    let result: T | undefined;
    try {
      result = await auditedChange(pool, { tokenName: caller.tokenName, tokenHash: caller.tokenHash, action, subject }, work);
    } catch (err) {
      throw refusal(err);
    }
    if (result === undefined) throw notFound();
    return result;
  }

  return {
    /** The endpoints of these workspaces (`all`: every endpoint, the environment's first), with their counts. */
    async list(workspaces: readonly string[] | 'all'): Promise<EndpointState[]> {
      const endpoints =
        workspaces === 'all'
          ? await listEveryEndpoint(pool)
          : (await Promise.all(workspaces.map((workspace) => listEndpoints(pool, workspace)))).flat();
      return withCounts(pool, endpoints);
    },

    get,

    /** A new endpoint of the workspace; its secret is in this answer only. */
    async add(caller: Caller, workspace: string, input: EndpointInput): Promise<{ endpoint: EndpointState; secret: string }> {
      if (!(await knows(workspace))) throw new HttpError(404, 'workspace_not_found', `there is no workspace "${workspace}"`);
      const id = newEndpointId();
      const subject = `${subjectOf({ id, workspace })} → ${origin(input.url)}`;
      const added = await audited(caller, 'endpoint.add', subject, (db) => addEndpoint(db, deps, workspace, input, id));
      return { endpoint: { ...added.endpoint, ...noDeliveries }, secret: added.secret };
    },

    /** Changes what the patch names; `enabled` turns it on (its held deliveries go out) or off (they are held). */
    async change(caller: Caller, scope: EndpointScope, id: string, patch: EndpointPatch): Promise<EndpointState> {
      const endpoint = await find(scope, id);
      const fields = changedFields(patch);
      if (fields.length === 0 && patch.enabled === undefined) return get(scope, id);
      const onOff = patch.enabled === undefined ? [] : [patch.enabled ? 'enabled' : 'disabled'];
      const action =
        fields.length === 0 && patch.enabled !== undefined ? (patch.enabled ? 'endpoint.enable' : 'endpoint.disable') : 'endpoint.change';
      const what = [...fields, ...onOff].join(', ');
      const url = patch.url === undefined ? '' : ` → ${origin(patch.url)}`;
      const changed = await audited(caller, action, `${subjectOf(endpoint)}: ${what}${url}`, (db) => changeEndpoint(db, deps, id, patch));
      return get(scope, changed.id);
    },

    /** A new secret (in this answer only); the ones before sign beside it until `previousUntil`. */
    async rotate(caller: Caller, scope: EndpointScope, id: string): Promise<{ secret: string; previousUntil: Date }> {
      const endpoint = await find(scope, id);
      const secret = await audited(caller, 'endpoint.rotate-secret', subjectOf(endpoint), (db) => rotateSecret(db, deps, id));
      return { secret, previousUntil: new Date(Date.now() + secretOverlapMs) };
    },

    /** Removes the endpoint with its deliveries (the undelivered ones are not sent). */
    async remove(caller: Caller, scope: EndpointScope, id: string): Promise<void> {
      const endpoint = await find(scope, id);
      await audited(caller, 'endpoint.remove', subjectOf(endpoint), async (db) => ((await removeEndpoint(db, id)) ? true : undefined));
    },

    /** The endpoint's deliveries, newest first, with their attempts. */
    async deliveries(
      scope: EndpointScope,
      id: string,
      query: { state?: DeliveryState; limit: number; before?: string },
    ): Promise<DeliveryPage> {
      await find(scope, id);
      const rows = await listDeliveries(pool, id, { ...query, limit: query.limit + 1 });
      const deliveries = rows.slice(0, query.limit);
      return { deliveries, next: rows.length > query.limit ? deliveries.at(-1)!.id : null };
    },

    /** Sends one delivery again now (held while the endpoint is disabled); its state after. */
    async retry(caller: Caller, scope: EndpointScope, id: string, deliveryId: string): Promise<DeliveryState> {
      const endpoint = await find(scope, id);
      const state = await auditedChange(
        pool,
        {
          tokenName: caller.tokenName,
          tokenHash: caller.tokenHash,
          action: 'delivery.retry',
          subject: `delivery ${deliveryId} to ${subjectOf(endpoint)}`,
        },
        (db) => retryDelivery(db, id, deliveryId),
      );
      if (state === undefined) throw new HttpError(404, 'delivery_not_found', 'the endpoint has no delivery with this id');
      return state;
    },

    /** Makes every notification since `since` due again at once, in order (the engine sends them); how many deliveries that touched. */
    async replay(caller: Caller, scope: EndpointScope, id: string, since: Date): Promise<number> {
      const endpoint = await find(scope, id);
      return audited(caller, 'endpoint.replay', `${subjectOf(endpoint)}: since ${since.toISOString()}`, (db) => replaySince(db, id, since));
    },
  };
}
