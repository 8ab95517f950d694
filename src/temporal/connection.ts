import { Client, Connection, isGrpcServiceError, type WorkflowClientInterceptor } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import proto from '@temporalio/proto';
import { msToTs } from '@temporalio/common/lib/time.js';
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

/** `interceptors`: the workflow client's (tracing's, src/temporal/tracing.ts). */
export async function connectClient(
  options: NativeConnectionOptions,
  namespace: string,
  connectTimeoutMs = 10_000,
  interceptors: WorkflowClientInterceptor[] = [],
): Promise<Client> {
  const connection = await Connection.connect({
    address: options.address,
    tls: options.tls,
    apiKey: options.apiKey,
    metadata: options.metadata,
    connectTimeout: connectTimeoutMs,
  });
  return new Client({ connection, namespace, ...(interceptors.length > 0 ? { interceptors: { workflow: interceptors } } : {}) });
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
const cliType = { KEYWORD: 'Keyword', BOOL: 'Bool', INT: 'Int' } as const;

/** gRPC status codes the namespace preparation tells apart. */
const grpcCode = { invalidArgument: 3, notFound: 5, alreadyExists: 6 } as const;
const codeOf = (err: unknown): number | undefined => (isGrpcServiceError(err) ? Number(err.code) : undefined);

/** How long the histories of closed workflows stay in Temporal; the albums themselves are kept in PostgreSQL. */
const namespaceRetention = '3 days';
/** How long to wait for a registration to reach every frontend's namespace cache. */
const usableWithinMs = 30_000;

/**
 * Makes the namespace ready for albumflow on any Temporal server: creates it when missing, registers the
 * search attributes it lacks, and returns once the frontend accepts them. A server that refuses (Temporal
 * Cloud, a namespace-scoped API key) gets an error naming the command an operator runs instead.
 */
export async function prepareNamespace(client: Client, namespace: string): Promise<void> {
  await ensureNamespace(client, namespace);
  await ensureSearchAttributes(client, namespace);
  await untilUsable(client, namespace);
}

async function ensureNamespace(client: Client, namespace: string): Promise<void> {
  const service = client.connection.workflowService;
  try {
    await service.describeNamespace({ namespace });
    return;
  } catch (err) {
    if (codeOf(err) !== grpcCode.notFound) throw err;
  }
  try {
    await service.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(namespaceRetention) });
  } catch (err) {
    if (codeOf(err) === grpcCode.alreadyExists) return; // another albumflow process created it first
    throw new Error(
      `Temporal namespace "${namespace}" does not exist and the server refused to create it (${(err as Error).message}). ` +
        `Create it, then start albumflow again: temporal operator namespace create --namespace ${namespace} --retention 72h`,
    );
  }
}

/** Registers the search attributes the namespace lacks (a self-hosted server lets a client do so). */
async function ensureSearchAttributes(client: Client, namespace: string): Promise<void> {
  const operator = client.connection.operatorService;
  const missingNow = async () => {
    const existing = await whilePropagating(namespace, () => operator.listSearchAttributes({ namespace }));
    const known = new Set(Object.keys(existing.customAttributes ?? {}));
    return Object.values(searchAttributes).filter((key) => !known.has(key.name));
  };
  const missing = await missingNow();
  if (missing.length > 0) {
    try {
      await operator.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(missing.map((key) => [key.name, indexedType[key.type]])),
      });
    } catch (err) {
      // Two processes registering at once: the loser is refused, and finds the attributes there.
      const stillMissing = await missingNow();
      if (stillMissing.length > 0) {
        const commands = stillMissing.map(
          (key) => `temporal operator search-attribute create --namespace ${namespace} --name ${key.name} --type ${cliType[key.type]}`,
        );
        throw new Error(
          `Temporal namespace "${namespace}" lacks the search attributes ${stillMissing.map((key) => key.name).join(', ')} and the server ` +
            `refused to register them (${(err as Error).message}). Register them, then start albumflow again:\n  ${commands.join('\n  ')}`,
        );
      }
    }
  }
}

/**
 * Waits until the frontend resolves the namespace and its search attributes. Both come from its namespace
 * cache, which a registration does not update: a namespace somebody asked for before it existed stays
 * "not found" until the cache's next refresh, and with SQL visibility a new custom attribute is an alias in
 * the namespace's metadata that the cache learns on that refresh, so a start naming it is refused until then
 * ("no mapping defined for search attribute"). A visibility query naming every attribute checks the same
 * cache and the same mapping as a start, without starting anything.
 */
async function untilUsable(client: Client, namespace: string): Promise<void> {
  const sample = { KEYWORD: "'albumflow'", BOOL: 'true', INT: '0' } as const;
  const query = Object.values(searchAttributes)
    .map((key) => `${key.name} = ${sample[key.type]}`)
    .join(' AND ');
  await whilePropagating(namespace, () => client.connection.workflowService.countWorkflowExecutions({ namespace, query }));
}

/** Calls again while the frontend answers as if the registration had not happened (NotFound, InvalidArgument). */
async function whilePropagating<T>(namespace: string, call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + usableWithinMs;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      const propagating = codeOf(err) === grpcCode.invalidArgument || codeOf(err) === grpcCode.notFound;
      if (!propagating || Date.now() > deadline) {
        throw new Error(
          `Temporal namespace "${namespace}" and its search attributes are registered but not usable: ${(err as Error).message}`,
        );
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
