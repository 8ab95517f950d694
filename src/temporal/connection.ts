import { Client, Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import proto from '@temporalio/proto';
import { searchAttributes } from '../../workflows/definitions.js';

/**
 * Connection options for a Temporal frontend. With an explicit address (the embedded dev server),
 * a plain local connection; otherwise what the Temporal environment configuration says
 * (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE and the
 * temporal.toml profiles), as every Temporal SDK and the CLI read them.
 */
export function temporalConnectOptions(embeddedAddress: string | undefined): {
  connectionOptions: NativeConnectionOptions;
  namespace: string | undefined;
} {
  if (embeddedAddress) return { connectionOptions: { address: embeddedAddress }, namespace: undefined };
  const { connectionOptions, namespace } = loadClientConnectConfig();
  return { connectionOptions, namespace };
}

export async function connectClient(options: NativeConnectionOptions, namespace: string): Promise<Client> {
  const connection = await Connection.connect({
    address: options.address,
    tls: options.tls,
    apiKey: options.apiKey,
    metadata: options.metadata,
    connectTimeout: 10_000,
  });
  return new Client({ connection, namespace });
}

export async function connectWorker(options: NativeConnectionOptions): Promise<NativeConnection> {
  return NativeConnection.connect(options);
}

const { IndexedValueType } = proto.temporal.api.enums.v1;
const indexedType = {
  KEYWORD: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  BOOL: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  INT: IndexedValueType.INDEXED_VALUE_TYPE_INT,
} as const;

/**
 * Registers albumflow's search attributes on a namespace that lacks them (self-hosted clusters).
 * Returns the names that are still missing when the server refuses (Temporal Cloud registers
 * them through its own tooling).
 */
export async function ensureSearchAttributes(client: Client, namespace: string): Promise<string[]> {
  const existing = await client.connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = Object.values(searchAttributes).filter((key) => !known.has(key.name));
  if (missing.length === 0) return [];
  try {
    await client.connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((key) => [key.name, indexedType[key.type]])),
    });
    return [];
  } catch {
    return missing.map((key) => key.name);
  }
}
