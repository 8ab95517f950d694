// A fake Bot API server of our own, for tests and the demo (test/harness/servers/fake-bot-api-main.ts); it never
// talks to Telegram: getFile and the file route behind it, setWebhook, and the failures the real one
// shows (too big, expired paths, server errors, throttling). It logs every request, so a test can count
// calls and see where the token went.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { listen } from './listen.js';

export interface FakeFile {
  content: Buffer;
  /** Whether getFile answers 400 "file is too big" (the cloud API's 20 MB limit). */
  tooBig?: boolean;
  /** A path from getFile serves the file once, then 404s, as an expired path does. */
  expireAfterOneUse?: boolean;
  /** The file_path getFile answers instead of a fresh `documents/file_<n>` (written to disk in local mode). */
  filePath?: string;
  /** The Content-Type the file route answers (default application/octet-stream). */
  contentType?: string;
}

export interface RecordedRequest {
  /** When it arrived (ms since the epoch). */
  at: number;
  method: string;
  /** As requested, token included. */
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * One answer given instead of the normal one: a JSON body, or a text body as is; `hang` never answers;
 * `cutShort` (the file route) serves the file as usual — the path's use counts — but breaks the
 * connection after half of its bytes.
 */
export type ScriptedAnswer = { status: number; body: unknown; headers?: Record<string, string> } | { hang: true } | { cutShort: true };

export type FakeRoute = 'getFile' | 'file' | 'setWebhook';

export interface FakeBotApiOptions {
  /**
   * Behave like a local Bot API server started with `--local`: getFile answers an absolute path of a
   * file it wrote under `dir/<token>/`, and the file route answers 404 (that server serves no files).
   */
  localDir?: string;
  /** The port to listen on, on 127.0.0.1 (default: a free one). */
  port?: number;
  /** Called with each request once it is answered (its path holds the token). */
  onAnswered?: (request: RecordedRequest, status: number) => void;
}

export interface FakeBotApi {
  /** The TELEGRAM_API_ROOT to give albumflow. */
  url: string;
  requests: RecordedRequest[];
  /** setWebhook calls by bot token, last one last. */
  webhooks: Map<string, Array<Record<string, unknown>>>;
  addBot(token: string): void;
  addFile(token: string, fileId: string, file: FakeFile): void;
  /** The next request to `route` gets `answer` instead (once per call of this). */
  failNext(route: FakeRoute, answer: ScriptedAnswer): void;
  /** Requests of one route, optionally of one bot. */
  calls(route: FakeRoute, token?: string): RecordedRequest[];
  close(): Promise<void>;
}

interface IssuedPath {
  token: string;
  fileId: string;
  uses: number;
}

const methodPath = /^\/bot([^/]+)\/([A-Za-z]+)$/;
const filePath = /^\/file\/bot([^/]+)\/(.+)$/;
const secretTokenPattern = /^[A-Za-z0-9_-]{1,256}$/;

export async function startFakeBotApi(options: FakeBotApiOptions = {}): Promise<FakeBotApi> {
  const bots = new Map<string, Map<string, FakeFile>>();
  const issued = new Map<string, IssuedPath>();
  const scripted = new Map<FakeRoute, ScriptedAnswer[]>();
  const requests: RecordedRequest[] = [];
  const webhooks = new Map<string, Array<Record<string, unknown>>>();
  const hanging = new Set<http.ServerResponse>();
  let counter = 0;

  function routeOf(url: string): FakeRoute | null {
    if (filePath.test(url)) return 'file';
    const method = methodPath.exec(url)?.[2]?.toLowerCase();
    if (method === 'getfile') return 'getFile';
    if (method === 'setwebhook') return 'setWebhook';
    return null;
  }

  function send(response: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(body));
  }
  const apiError = (response: http.ServerResponse, status: number, description: string, parameters?: object) =>
    send(response, status, { ok: false, error_code: status, description, ...(parameters ? { parameters } : {}) });

  function params(request: http.IncomingMessage, url: URL, body: string): Record<string, unknown> {
    const values: Record<string, unknown> = Object.fromEntries(url.searchParams);
    const type = request.headers['content-type'] ?? '';
    if (type.startsWith('application/json') && body !== '') Object.assign(values, JSON.parse(body) as object);
    if (type.startsWith('application/x-www-form-urlencoded')) Object.assign(values, Object.fromEntries(new URLSearchParams(body)));
    return values;
  }

  function getFile(response: http.ServerResponse, token: string, args: Record<string, unknown>) {
    const fileId = args.file_id;
    const file = typeof fileId === 'string' ? bots.get(token)?.get(fileId) : undefined;
    if (typeof fileId !== 'string' || !file) return apiError(response, 400, 'Bad Request: invalid file_id');
    if (file.tooBig) return apiError(response, 400, 'Bad Request: file is too big');
    let answeredPath = file.filePath;
    if (answeredPath === undefined) {
      counter += 1;
      answeredPath = `documents/file_${counter}`;
      if (options.localDir !== undefined) {
        answeredPath = path.join(options.localDir, token, answeredPath);
        fs.mkdirSync(path.dirname(answeredPath), { recursive: true });
        fs.writeFileSync(answeredPath, file.content);
      }
    }
    issued.set(answeredPath, { token, fileId, uses: 0 });
    send(response, 200, {
      ok: true,
      result: { file_id: fileId, file_unique_id: `unique-${fileId}`, file_size: file.content.length, file_path: answeredPath },
    });
  }

  function serveFile(response: http.ServerResponse, token: string, requestedPath: string, cutShort = false) {
    const notFound = () => apiError(response, 404, 'Not Found');
    if (options.localDir !== undefined) return notFound();
    const entry = issued.get(decodeURIComponent(requestedPath));
    const file = entry && entry.token === token ? bots.get(token)?.get(entry.fileId) : undefined;
    if (!entry || !file || (file.expireAfterOneUse && entry.uses > 0)) return notFound();
    entry.uses += 1;
    response.writeHead(200, {
      'content-type': file.contentType ?? 'application/octet-stream',
      'content-length': String(file.content.length),
    });
    if (!cutShort) return response.end(file.content);
    response.write(file.content.subarray(0, Math.floor(file.content.length / 2)), () => response.destroy());
  }

  function setWebhook(response: http.ServerResponse, token: string, args: Record<string, unknown>) {
    const url = args.url;
    if (typeof url !== 'string' || !url.startsWith('https://')) {
      return apiError(response, 400, 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook');
    }
    if (args.secret_token !== undefined && (typeof args.secret_token !== 'string' || !secretTokenPattern.test(args.secret_token))) {
      return apiError(response, 400, 'Bad Request: secret token contains unallowed characters');
    }
    webhooks.set(token, [...(webhooks.get(token) ?? []), args]);
    send(response, 200, { ok: true, result: true, description: 'Webhook was set' });
  }

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(request.url ?? '/', 'http://fake');
      const recorded: RecordedRequest = {
        at: Date.now(),
        method: request.method ?? '',
        path: url.pathname + url.search,
        headers: request.headers,
        body,
      };
      requests.push(recorded);
      response.on('close', () => options.onAnswered?.(recorded, response.statusCode));

      const route = routeOf(url.pathname);
      const answer = route ? scripted.get(route)?.shift() : undefined;
      if (answer && 'hang' in answer) {
        hanging.add(response);
        return;
      }
      const token = (methodPath.exec(url.pathname) ?? filePath.exec(url.pathname))?.[1];
      if (answer && 'cutShort' in answer) {
        if (route !== 'file' || token === undefined) return apiError(response, 500, 'cutShort answers the file route only');
        return serveFile(response, token, filePath.exec(url.pathname)![2]!, true);
      }
      if (answer && typeof answer.body === 'string') {
        response.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
        return response.end(answer.body);
      }
      if (answer) return send(response, answer.status, answer.body, answer.headers);

      if (!route || token === undefined) return apiError(response, 404, 'Not Found');
      if (route === 'file') return serveFile(response, token, filePath.exec(url.pathname)![2]!);
      if (!bots.has(token)) return apiError(response, 401, 'Unauthorized');
      let args: Record<string, unknown>;
      try {
        args = params(request, url, body);
      } catch {
        return apiError(response, 400, "Bad Request: can't parse JSON object");
      }
      if (route === 'getFile') return getFile(response, token, args);
      return setWebhook(response, token, args);
    });
  });
  const port = await listen(server, options.port);

  const filesOf = (token: string) => bots.get(token) ?? bots.set(token, new Map()).get(token)!;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    webhooks,
    addBot(token) {
      filesOf(token);
    },
    addFile(token, fileId, file) {
      filesOf(token).set(fileId, file);
    },
    failNext(route, answer) {
      scripted.set(route, [...(scripted.get(route) ?? []), answer]);
    },
    calls(route, token) {
      return requests.filter((request) => {
        const [pathname] = request.path.split('?');
        if (routeOf(pathname!) !== route) return false;
        return token === undefined || pathname!.startsWith(`/bot${token}/`) || pathname!.startsWith(`/file/bot${token}/`);
      });
    },
    async close() {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
