import pg from 'pg';

export interface ListenerOptions {
  config: pg.ClientConfig;
  channel: string;
  /** Called for each notification, and after every (re)connection since notifications may have been missed. */
  onNotification: () => void;
  onConnectionLost?: (err: Error | undefined) => void;
  /** Delay before reconnection attempt `attempt` (1, 2, …). */
  reconnectDelayMs?: (attempt: number) => number;
}

export interface Listener {
  close(): Promise<void>;
}

const defaultReconnectDelayMs = (attempt: number) => Math.min(10_000, 250 * 2 ** (attempt - 1));

/** LISTEN on a dedicated connection that reconnects (with backoff) whenever PostgreSQL drops it. */
export function listen(options: ListenerOptions): Listener {
  const reconnectDelayMs = options.reconnectDelayMs ?? defaultReconnectDelayMs;
  let closed = false;
  let current: pg.Client | undefined;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let connecting: Promise<void> | undefined;

  function scheduleReconnect(err: Error | undefined) {
    if (closed) return;
    options.onConnectionLost?.(err);
    failures += 1;
    timer = setTimeout(() => {
      timer = undefined;
      connecting = connect();
    }, reconnectDelayMs(failures));
  }

  function lost(client: pg.Client, err: Error | undefined) {
    if (current !== client) return;
    current = undefined;
    client.end().catch(() => undefined);
    scheduleReconnect(err);
  }

  async function connect(): Promise<void> {
    const client = new pg.Client(options.config);
    client.on('error', (err) => lost(client, err));
    client.on('end', () => lost(client, undefined));
    client.on('notification', (message) => {
      if (message.channel === options.channel) options.onNotification();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(options.channel)}`);
    } catch (err) {
      client.end().catch(() => undefined);
      scheduleReconnect(err as Error);
      return;
    }
    if (closed) {
      await client.end().catch(() => undefined);
      return;
    }
    current = client;
    failures = 0;
    options.onNotification();
  }

  connecting = connect();

  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      await connecting;
      const client = current;
      current = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
