// A sender's URL: resolved and vetted by albumflow itself (network-guard.ts), connected to the address
// that was vetted, redirects followed hop by hop, each vetted again. Connections are kept alive between
// downloads from the same host: a new one is made to the address vetted for the request that makes it, and
// a kept one goes back to the host it was made to, whose name every request vets again first.
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { pinnedLookup, vetTarget, type NetworkPolicy, type ResolvedAddress } from '../common/network-guard.js';
import type { StreamedFile } from '../platforms/api.js';
import { PermanentDownloadError, TransientDownloadError, seconds } from './errors.js';

export interface HttpLimits {
  /** Until the TCP connection of one hop is established. */
  connectTimeoutMs: number;
  /** Longest silence of the server (no response, no body bytes). */
  idleTimeoutMs: number;
  maxRedirects: number;
}

const expiredStatuses = new Set([401, 403, 404, 410]);
const redirectStatuses = new Set([301, 302, 303, 307, 308]);
const requestHeaders = { 'user-agent': 'albumflow', accept: '*/*', 'accept-encoding': 'identity' };

function statusError(status: number): Error {
  const message = `HTTP ${status}`;
  if (expiredStatuses.has(status)) return new PermanentDownloadError('expired', message);
  if (status >= 500 || status === 408 || status === 429) return new TransientDownloadError(message);
  return new PermanentDownloadError('failed', message);
}

function parseUrl(text: string, base?: URL): URL {
  try {
    return new URL(text, base);
  } catch {
    throw new PermanentDownloadError('failed', base ? 'a redirect pointed to an invalid URL' : 'the attachment URL is not a valid URL');
  }
}

/** The kept-alive connections of one worker's downloads, one pool per scheme. */
export interface HttpAgents {
  http: http.Agent;
  https: https.Agent;
}

/** Idle connections kept per host, at most. */
const idleConnectionsPerHost = 16;

export function createHttpAgents(idleMs: number): HttpAgents {
  const options = { keepAlive: true, maxFreeSockets: idleConnectionsPerHost, scheduling: 'lifo' as const };
  return { http: closingIdle(new http.Agent(options), idleMs), https: closingIdle(new https.Agent(options), idleMs) };
}

/**
 * Gives each connection the agent keeps a silence limit once its request is done (the agent then destroys
 * it); the next request on it sets its own. Not the agent's `timeout` option: that one would apply to
 * every socket from its creation.
 */
function closingIdle<A extends http.Agent>(agent: A, idleMs: number): A {
  // Node's agent answers whether it keeps the socket; its types say void.
  const keep = agent.keepSocketAlive.bind(agent) as (socket: Duplex) => boolean;
  agent.keepSocketAlive = (socket) => {
    const kept = keep(socket);
    if (kept) (socket as Socket).setTimeout(idleMs);
    return kept;
  };
  return agent;
}

/** One GET to a vetted address; connection and silence limits abort the whole attempt. */
function get(
  url: URL,
  target: ResolvedAddress,
  attempt: AbortController,
  limits: HttpLimits,
  agents: HttpAgents,
): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const secure = url.protocol === 'https:';
    const request = (secure ? https : http).get(url, {
      agent: secure ? agents.https : agents.http,
      // Used when the request makes a new connection; a kept one was made to this host's vetted address before.
      lookup: pinnedLookup(target),
      signal: attempt.signal,
      headers: requestHeaders,
    });
    const connectTimer = setTimeout(
      () => attempt.abort(new TransientDownloadError(`no connection to ${url.hostname} within ${seconds(limits.connectTimeoutMs)}`)),
      limits.connectTimeoutMs,
    );
    const connected = () => clearTimeout(connectTimer);
    // The request's own timeout: it ends with the request, so a kept connection does not carry it to the next.
    request.setTimeout(limits.idleTimeoutMs, () =>
      attempt.abort(new TransientDownloadError(`${url.hostname} sent nothing for ${seconds(limits.idleTimeoutMs)}`)),
    );
    request.once('socket', (socket) => {
      if (socket.connecting) socket.once('connect', connected);
      else connected();
    });
    request.once('response', (response) => {
      connected();
      resolve(response);
    });
    request.once('error', (err) => {
      connected();
      reject(err);
    });
  });
}

/** Follows up to `maxRedirects` redirects, vetting every hop, to a 2xx response: the file to store. */
export async function openHttpMedia(
  rawUrl: string,
  network: NetworkPolicy,
  attempt: AbortController,
  limits: HttpLimits,
  agents: HttpAgents,
): Promise<StreamedFile> {
  let url = parseUrl(rawUrl);
  for (let redirects = 0; ; redirects++) {
    const target = await vetTarget(url, network);
    const response = await get(url, target, attempt, limits, agents);
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) {
      const declared = response.headers['content-length'];
      return {
        stream: response,
        contentLength: declared === undefined ? null : Number(declared),
        contentType: response.headers['content-type'] ?? null,
      };
    }
    response.destroy();
    const location = response.headers.location;
    if (!redirectStatuses.has(status) || !location) throw statusError(status);
    if (redirects === limits.maxRedirects) throw new PermanentDownloadError('failed', `more than ${limits.maxRedirects} redirects`);
    url = parseUrl(location, url);
  }
}

/** Node's words for a response body whose connection closed before its end. */
export function cutShort(err: unknown): boolean {
  return err instanceof Error && err.message === 'aborted' && (err as NodeJS.ErrnoException).code === 'ECONNRESET';
}
