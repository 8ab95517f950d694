// What every albumflow command shares: its errors and the HTTP client of a running albumflow.

/** Exit codes: 1 when albumflow refused or could not be reached, 2 for a command line it cannot run. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
  }
}

export const misuse = (message: string) => new CliError(`${message}\nRun \`albumflow help\` for usage.`, 2);

export type Api = ReturnType<typeof createApi>;

/** Requests to albumflow's HTTP API at `baseUrl`; a refusal or an unreachable server becomes a CliError. */
export function createApi(baseUrl: string) {
  async function request(method: 'GET' | 'POST', path: string, init: { body?: Buffer | string; headers?: Record<string, string> } = {}) {
    let response: Response;
    try {
      response = await fetch(`${baseUrl}${path}`, { method, body: init.body, headers: init.headers });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      throw new CliError(`cannot reach albumflow at ${baseUrl} (${cause}). Is it running? Start it with \`npm start\` or pass --url.`);
    }
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // a non-JSON body is shown as text
    }
    return { status: response.status, body };
  }

  function refusal(status: number, body: unknown): CliError {
    const error = (body as { error?: { code?: string; message?: string } } | null)?.error;
    return new CliError(error ? `${status} ${error.code}: ${error.message}` : `${status}: ${typeof body === 'string' ? body : JSON.stringify(body)}`);
  }

  /** The body of a 2xx answer; anything else is the error albumflow gave. */
  async function expect<T>(method: 'GET' | 'POST', path: string, init?: Parameters<typeof request>[2]): Promise<T> {
    const { status, body } = await request(method, path, init);
    if (status < 200 || status >= 300) throw refusal(status, body);
    return body as T;
  }

  return { request, expect, refusal };
}

