import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import { freeClusterPorts, startTemporalCluster, type TemporalCluster } from '../../tools/cluster/cluster.js';
import { setUpSchemas, temporalDatabase } from '../../tools/cluster/database.js';
import { locateClusterTools } from '../../tools/cluster/builds.js';
import { temporalServerVersion } from '../../tools/cluster/versions.js';
import { prepareNamespace } from '../../src/temporal/connection.js';
import { searchAttributes, workflowTypes } from '../../workflows/definitions.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import { eventually, newAlbumKey, signalAlbum, storeAlbumChildren } from '../harness/albums.js';
import { storedDecisions } from '../harness/rows.js';
import { startTestWorker, testClient, testConfig, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';

/** Every search attribute albumflow keeps, with a value, as the dispatcher and the workflow set them. */
const allAttributes = [
  { key: searchAttributes.workspace, value: 'ws' },
  { key: searchAttributes.provider, value: 'whatsapp' },
  { key: searchAttributes.state, value: 'collecting' },
  { key: searchAttributes.needsReview, value: false },
  { key: searchAttributes.children, value: 1 },
];
const attributeQuery =
  "AlbumWorkspace = 'ws' AND AlbumProvider = 'whatsapp' AND AlbumState = 'collecting' AND AlbumNeedsReview = false AND AlbumChildren = 1";

async function connect(address: string, namespace: string): Promise<Client> {
  return new Client({ connection: await Connection.connect({ address }), namespace });
}

describe('albumflow on the real Temporal server (PostgreSQL persistence and SQL visibility)', () => {
  const address = process.env.TEMPORAL_ADDRESS!;

  it('is the server every test of this run talks to, the version the tool cache built', async () => {
    expect(inject('temporalAddress')).toBe(address);
    const connection = await Connection.connect({ address });
    try {
      expect((await connection.workflowService.getSystemInfo({})).serverVersion).toBe(temporalServerVersion);
    } finally {
      await connection.close();
    }
  });

  it('creates a missing namespace and its search attributes, and a workflow started with them at once is accepted', async () => {
    const namespace = unique('fresh');
    const client = await connect(address, namespace);
    try {
      // Asked for before it exists, as a UI or a second process would: the frontend then remembers "not found".
      const before = await client.connection.workflowService.countWorkflowExecutions({ namespace, query: '' }).catch((err: unknown) => err);
      expect(isGrpcServiceError(before) && before.code).toBe(5);

      await prepareNamespace(client, namespace);
      const handle = await client.workflow.start(workflowTypes.album, {
        workflowId: unique('probe'),
        taskQueue: unique('no-worker'),
        args: [{}],
        typedSearchAttributes: allAttributes,
      });
      const listed = await client.connection.operatorService.listSearchAttributes({ namespace });
      expect(Object.keys(listed.customAttributes ?? {}).sort()).toEqual(
        Object.values(searchAttributes)
          .map((key) => key.name)
          .sort(),
      );
      await eventually(async () => {
        const { count } = await client.connection.workflowService.countWorkflowExecutions({ namespace, query: attributeQuery });
        expect(Number(count)).toBe(1);
      });
      await handle.terminate('probe');
    } finally {
      await client.connection.close();
    }
  });

  it('lets several processes prepare the same fresh namespace at once', async () => {
    const namespace = unique('raced');
    const clients = await Promise.all([1, 2, 3].map(() => connect(address, namespace)));
    try {
      await Promise.all(clients.map((client) => prepareNamespace(client, namespace)));
      const listed = await clients[0]!.connection.operatorService.listSearchAttributes({ namespace });
      expect(Object.keys(listed.customAttributes ?? {}).sort()).toEqual(
        Object.values(searchAttributes)
          .map((key) => key.name)
          .sort(),
      );
      await prepareNamespace(clients[1]!, namespace);
    } finally {
      await Promise.all(clients.map((client) => client.connection.close()));
    }
  });

  it('names the missing search attributes and the commands to run when the server refuses to register them', async () => {
    const namespace = unique('full');
    const client = await connect(address, namespace);
    try {
      await client.connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
      // SQL visibility has three Bool columns per namespace; with all three taken, AlbumNeedsReview has none.
      const { INDEXED_VALUE_TYPE_BOOL } = temporal.api.enums.v1.IndexedValueType;
      await client.connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: { OtherFlag1: INDEXED_VALUE_TYPE_BOOL, OtherFlag2: INDEXED_VALUE_TYPE_BOOL, OtherFlag3: INDEXED_VALUE_TYPE_BOOL },
      });
      const refused = await prepareNamespace(client, namespace).catch((err: Error) => err);
      expect(refused).toBeInstanceOf(Error);
      const message = (refused as Error).message;
      expect(message).toMatch(
        new RegExp(
          `^Temporal namespace "${namespace}" lacks the search attributes AlbumWorkspace, AlbumProvider, AlbumState, AlbumNeedsReview, AlbumChildren and the server refused to register them \\(.*Bool.*\\)\\. Register them, then start albumflow again:`,
        ),
      );
      expect(message).toContain(`temporal operator search-attribute create --namespace ${namespace} --name AlbumNeedsReview --type Bool`);
      expect(message).toContain(`temporal operator search-attribute create --namespace ${namespace} --name AlbumChildren --type Int`);
    } finally {
      await client.connection.close();
    }
  });

  it("runs a decision's activity eagerly, on the worker that completed the workflow task", async () => {
    const config = testConfig();
    const pool: Pool = testPool(config);
    const client = await testClient(config);
    const worker = await startTestWorker(config, pool);
    try {
      const key = newAlbumKey(unique('ws'));
      const [child] = await storeAlbumChildren(pool, key, [{ messageId: 'm0', index: 0, total: 1 }]);
      await signalAlbum(client, config, key, [child!]);
      await eventually(async () => expect(await storedDecisions(pool, albumWorkflowId(key))).toHaveLength(1));
      // The server's counters reach its Prometheus endpoint on the reporter's next flush, under label values
      // with every character Prometheus does not allow replaced by "_".
      const taskQueueLabel = `taskqueue="${config.temporal.taskQueue.replace(/[^a-zA-Z0-9_]/g, '_')}"`;
      await eventually(async () => {
        const metrics = await (await fetch(inject('clusterMetricsUrl'))).text();
        const eager = metrics
          .split('\n')
          .filter((line) => line.startsWith('activity_eager_execution{') && line.includes(taskQueueLabel))
          .map((line) => Number(line.split(' ').at(-1)));
        expect(eager.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      });
    } finally {
      await worker.stop();
      await client.connection.close();
      await pool.end();
    }
  });

  it('serves the Web UI, which reads the server', async () => {
    const response = await fetch(`${inject('clusterUiUrl')}/api/v1/namespaces`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { namespaces: Array<{ namespaceInfo: { name: string } }> };
    expect(body.namespaces.map((ns) => ns.namespaceInfo.name)).toContain('default');
  });
});

describe('the real Temporal server split into one process per service', () => {
  let cluster: TemporalCluster;
  let logDir: string;

  beforeAll(async () => {
    const tools = await locateClusterTools();
    const base = new URL(inject('clusterPostgresUrl'));
    base.pathname = `/${unique('split').replaceAll('-', '_')}`;
    const database = temporalDatabase(base.toString());
    await setUpSchemas(tools.sqlTool, database);
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-split-logs-'));
    cluster = await startTemporalCluster({
      tools,
      database,
      ports: await freeClusterPorts(true),
      split: true,
      ui: false,
      logDir,
      logLevel: 'warn',
    });
  });

  afterAll(async () => {
    await cluster?.stop();
    fs.rmSync(logDir, { recursive: true, force: true });
  });

  it('runs frontend, history, matching and worker as four processes that serve together', async () => {
    const pids = cluster.pids();
    expect(Object.keys(pids)).toEqual(['temporal-frontend', 'temporal-history', 'temporal-matching', 'temporal-worker']);
    expect(new Set(Object.values(pids)).size).toBe(4);
    for (const url of Object.values(cluster.metricsUrls)) expect((await fetch(url)).status).toBe(200);

    const client = await connect(cluster.address, 'default');
    try {
      await prepareNamespace(client, 'default');
      const handle = await client.workflow.start(workflowTypes.album, {
        workflowId: unique('split'),
        taskQueue: unique('no-worker'),
        args: [{}],
        typedSearchAttributes: allAttributes,
      });
      expect((await handle.describe()).status.name).toBe('RUNNING');
      await handle.terminate('probe');
      expect((await handle.describe()).status.name).toBe('TERMINATED');
    } finally {
      await client.connection.close();
    }
  });
});
