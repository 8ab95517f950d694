// Managing endpoints for the routes, the CLI and the console: what is checked before a change is stored,
// and the secrets made and sealed here. Each function takes the client of the caller's transaction
// (auditedChange's, src/db/tenants.ts), so that a change commits with its audit entry.
import crypto from 'node:crypto';
import type { KeyRing } from '../common/secret-key.js';
import {
  deleteEndpoint,
  endpointSecretPlace,
  environmentEndpointId,
  getEndpoint,
  insertEndpoint,
  rotateEndpointSecret,
  switchEndpoint,
  updateEndpoint,
  type EndpointChange,
  type StoredEndpoint,
} from '../db/endpoints.js';
import type { Queryable } from '../db/pool.js';
import { isNotificationType, notificationTypes, type NotificationType } from '../domain/types.js';
import { isStorableText } from '../domain/storable-text.js';
import { base32 } from './base32.js';
import type { TargetGuard } from './engine.js';
import { generateSecret } from './wire.js';

/** How long a rotated-out secret keeps signing beside the new one. */
export const secretOverlapMs = 24 * 60 * 60 * 1000;
export const defaultRateLimit = 10;
export const maxRateLimit = 1000;
export const maxUrlLength = 2048;
export const maxDescriptionLength = 1000;

/** A change refused for what it asks: the route answers 400 naming the field. */
export class EndpointInputError extends Error {
  override name = 'EndpointInputError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** A change of the environment endpoint other than turning it on or off: it changes through NOTIFY_URL (409). */
export class EndpointReadOnlyError extends Error {
  override name = 'EndpointReadOnlyError';
  constructor() {
    super('the endpoint is declared by NOTIFY_URL and NOTIFY_SECRET; change them in the environment and restart');
  }
}

export interface EndpointDeps {
  /** Seals the secrets. */
  keys: KeyRing;
  /** The network guard, asked at save as at every attempt. */
  guard: TargetGuard;
}

export interface EndpointInput {
  url: string;
  /** Absent or null: every type. */
  types?: readonly string[] | null;
  description?: string;
  /** Requests a second at most (default 10). */
  rateLimit?: number;
}

export interface EndpointPatch extends Partial<EndpointInput> {
  enabled?: boolean;
}

const newId = (prefix: string) => `${prefix}_${base32(crypto.randomBytes(10))}`;

/** An id for a new endpoint (`ep_` and base32 of 80 random bits). */
export const newEndpointId = () => newId('ep');

async function checkedUrl(text: string, guard: TargetGuard): Promise<string> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new EndpointInputError('url', 'not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new EndpointInputError('url', 'only http and https URLs receive notifications');
  if (text.length > maxUrlLength) throw new EndpointInputError('url', `longer than ${maxUrlLength} characters`);
  try {
    await guard(url);
  } catch (err) {
    throw new EndpointInputError('url', (err as Error).message);
  }
  return url.href;
}

function checkedTypes(types: readonly string[] | null | undefined): NotificationType[] | null {
  if (types === undefined || types === null) return null;
  if (types.length === 0)
    throw new EndpointInputError('types', `name at least one of ${notificationTypes.join(', ')}, or leave it out for all`);
  const unknown = types.find((type) => !isNotificationType(type));
  if (unknown !== undefined) throw new EndpointInputError('types', `"${unknown}" is not one of ${notificationTypes.join(', ')}`);
  return [...new Set(types as NotificationType[])];
}

function checkedDescription(description: string): string {
  if (description.length > maxDescriptionLength)
    throw new EndpointInputError('description', `longer than ${maxDescriptionLength} characters`);
  if (!isStorableText(description)) throw new EndpointInputError('description', 'holds a NUL character or an unpaired surrogate');
  return description;
}

function checkedRateLimit(rateLimit: number): number {
  if (!Number.isInteger(rateLimit) || rateLimit < 1 || rateLimit > maxRateLimit) {
    throw new EndpointInputError('rateLimit', `a whole number of requests a second from 1 to ${maxRateLimit}`);
  }
  return rateLimit;
}

function sealedSecret(keys: KeyRing, endpointId: string, secret: string): { id: string; sealed: Buffer } {
  const id = newId('sec');
  return { id, sealed: keys.seal(secret, endpointSecretPlace(endpointId, id)) };
}

/**
 * Adds an endpoint to the workspace under `id` (one of newEndpointId's, by default a new one); the secret is
 * in the answer only (the API shows it once).
 */
export async function addEndpoint(
  db: Queryable,
  deps: EndpointDeps,
  workspace: string,
  input: EndpointInput,
  id: string = newEndpointId(),
): Promise<{ endpoint: StoredEndpoint; secret: string }> {
  const secret = generateSecret();
  const endpoint = await insertEndpoint(
    db,
    {
      id,
      workspace,
      url: await checkedUrl(input.url, deps.guard),
      types: checkedTypes(input.types),
      description: checkedDescription(input.description ?? ''),
      rateLimit: checkedRateLimit(input.rateLimit ?? defaultRateLimit),
    },
    sealedSecret(deps.keys, id, secret),
  );
  return { endpoint, secret };
}

/** Changes what the patch names (`enabled: false` holds its deliveries, `true` releases them); undefined for no such endpoint. */
export async function changeEndpoint(
  db: Queryable,
  deps: EndpointDeps,
  id: string,
  patch: EndpointPatch,
): Promise<StoredEndpoint | undefined> {
  const current = await getEndpoint(db, id);
  if (!current) return undefined;
  const { enabled, ...fields } = patch;
  if (current.source === 'environment' && Object.values(fields).some((value) => value !== undefined)) throw new EndpointReadOnlyError();
  const change: EndpointChange = {
    ...(fields.url !== undefined ? { url: await checkedUrl(fields.url, deps.guard) } : {}),
    ...(fields.types !== undefined ? { types: checkedTypes(fields.types) } : {}),
    ...(fields.description !== undefined ? { description: checkedDescription(fields.description) } : {}),
    ...(fields.rateLimit !== undefined ? { rateLimit: checkedRateLimit(fields.rateLimit) } : {}),
  };
  let changed = Object.keys(change).length > 0 ? await updateEndpoint(db, id, change) : current;
  if (enabled === true && !current.enabled) changed = await switchEndpoint(db, id, { enabled: true });
  if (enabled === false && current.enabled) changed = await switchEndpoint(db, id, { enabled: false, reason: 'operator' });
  return changed;
}

/** A new current secret (in the answer only); the ones before keep signing for `secretOverlapMs`. Undefined for no such endpoint. */
export async function rotateSecret(db: Queryable, deps: EndpointDeps, id: string): Promise<string | undefined> {
  if (id === environmentEndpointId) throw new EndpointReadOnlyError();
  const secret = generateSecret();
  return (await rotateEndpointSecret(db, id, sealedSecret(deps.keys, id, secret), secretOverlapMs)) ? secret : undefined;
}

/** Removes the endpoint with its deliveries (pending ones are not sent); false for no such endpoint. */
export async function removeEndpoint(db: Queryable, id: string): Promise<boolean> {
  if (id === environmentEndpointId) throw new EndpointReadOnlyError();
  return deleteEndpoint(db, id);
}
