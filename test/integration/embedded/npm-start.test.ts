import { execFile as execFileCallback } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedStatus } from '../../../src/embedded/server.js';
import { findProcess, isRunning, type ProcessIdentity } from '../../../src/embedded/ownership.js';
import { projectRoot } from '../../../src/common/paths.js';
import type { AlbumView } from '../../../src/domain/types.js';
import { eventually } from '../../harness/albums.js';
import { startFakeBotApi, type FakeBotApi } from '../../harness/servers/fake-bot-api.js';
import { demoBot, demoTelegramBots, exampleAlbumFile, servePhotos, type ServedPhoto } from '../../harness/servers/fake-bot-api-demo.js';
import { albumEvent, lineBodies, webhookRequest } from '../../harness/events.js';
import { startFakeLineApi, type FakeLineApi } from '../../harness/servers/fake-line-api.js';
import {
  demoChannel,
  demoLineChannels,
  exampleImageSetFile,
  serveImages,
  type ServedImage,
} from '../../harness/servers/fake-line-api-demo.js';
import { adminToken, interrupt, ownerOf, serve, serverRecord, startInstance, type Serving } from './instance.js';
import { userEnvironment } from '../../harness/environment.js';
import { killWatchdog } from './orphan.js';

const execFile = promisify(execFileCallback);

// `npm start` in child processes, each in a process group of its own as in a terminal, with neither
// DATABASE_URL nor TEMPORAL_ADDRESS: its own embedded PostgreSQL and Temporal dev server in a data
// directory made for this file. Its Telegram bot downloads from the fake Bot API, as in the demo of
// docs/telegram.md; its LINE channel from the fake LINE API, as in the demo of docs/line.md.

const workspace = 'embedded';
const secret = 'embedded-secret';
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-embedded-'));
// As root, the embedded PostgreSQL runs as the postgres user, which must reach its directory.
fs.chmodSync(dataDir, 0o755);

// Nothing of albumflow's from this process: the CLI finds its API token in the data directory.
const env: NodeJS.ProcessEnv = {
  ...userEnvironment(),
  DATA_DIR: dataDir,
  PORT: '0',
  TEMPORAL_PORT: '0',
  TEMPORAL_UI_PORT: '0',
  WORKSPACE_SECRETS: JSON.stringify({ [workspace]: [secret] }),
  TELEGRAM_BOTS: demoTelegramBots(workspace),
  LINE_CHANNELS: demoLineChannels(workspace),
  QUIET_PERIOD_MS: '300',
  MAX_WAIT_MS: '3000',
  LOG_LEVEL: 'info',
  // As an operator who wants a heap snapshot of a running instance sets it.
  NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${path.join(dataDir, 'diagnostics')}`,
};

/** The fake Bot API the bot downloads from (TELEGRAM_API_ROOT), and the photos it serves for the example album. */
let botApi: FakeBotApi | undefined;
let photos: ServedPhoto[] = [];
/** The fake LINE API the channel downloads from (LINE_API_ROOT, LINE_DATA_API_ROOT), and the images of the example set. */
let lineApi: FakeLineApi | undefined;
let images: ServedImage[] = [];

/** The last row of the decisions `albumflow status` prints, listing these children. */
const lastDecisionOf = (messageIds: string[]) => new RegExp(`\\n\\d+\\s+[a-z_]+\\s+\\S+\\s+${messageIds.join(', ')}\\n?$`);

/** `npx albumflow …` in the project, as a user runs it, with the environment of the instances (no ALBUMFLOW_TOKEN). */
async function npx(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return execFile('npx', ['albumflow', ...args], { cwd: projectRoot, env, timeout: 60_000 });
}

interface Readiness {
  status: string;
  embedded: Record<'postgres' | 'temporal', EmbeddedStatus>;
}

/** `/readyz` as the admin token sees it: with the embedded servers' pids and restarts. */
async function readiness(url: string): Promise<{ code: number; body: Readiness }> {
  const response = await fetch(`${url}/readyz`, { headers: { authorization: `Bearer ${adminToken(dataDir)}` } });
  return { code: response.status, body: (await response.json()) as Readiness };
}

async function post(url: string, event: Record<string, unknown>): Promise<number> {
  const delivery = { route: 'unifyport', workspace, secret, body: JSON.stringify(event) } as const;
  const { path: route, headers } = webhookRequest(delivery);
  const response = await fetch(`${url}${route}`, { method: 'POST', headers, body: delivery.body });
  return response.status;
}

/** Posts both photos of album `albumId` as a sender would: again until albumflow answers 202. */
async function postAlbum(url: string, albumId: string): Promise<void> {
  for (const [index, messageId] of [`${albumId}-0`, `${albumId}-1`].entries()) {
    const event = albumEvent({ conversationId: 'conv', albumId, messageId, index, total: 2 });
    await eventually(async () => expect(await post(url, event)).toBe(202), 60_000);
  }
}

/** The status API's body for a UnifyPort album of `conv`, or for `<provider>/<account>/<conversation>/<album>`. */
async function albumStatus(url: string, albumId: string): Promise<AlbumView | undefined> {
  // API_TOKENS is unset: the admin token albumflow generated in the data directory.
  const token = fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
  const tail = albumId.includes('/') ? albumId : `whatsapp/acc_1/conv/${albumId}`;
  const response = await fetch(`${url}/workspaces/${workspace}/albums/${tail}`, { headers: { authorization: `Bearer ${token}` } });
  return response.status === 200 ? ((await response.json()) as AlbumView) : undefined;
}

/** Waits until the album's decision holds both photos. */
async function decided(url: string, albumId: string): Promise<AlbumView> {
  return eventually(async () => {
    const status = await albumStatus(url, albumId);
    expect(status?.decisions.at(-1)?.childMessageIds).toEqual([`${albumId}-0`, `${albumId}-1`]);
    return status!;
  }, 90_000);
}

let instance: Serving | undefined;

afterAll(async () => {
  if (instance) await interrupt(instance);
  await botApi?.close();
  await lineApi?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('npm start without DATABASE_URL or TEMPORAL_ADDRESS', () => {
  beforeAll(async () => {
    botApi = await startFakeBotApi();
    photos = await servePhotos(botApi, demoBot.token, [exampleAlbumFile]);
    env.TELEGRAM_API_ROOT = botApi.url;
    lineApi = await startFakeLineApi();
    images = await serveImages(lineApi, [exampleImageSetFile]);
    env.LINE_API_ROOT = lineApi.url;
    env.LINE_DATA_API_ROOT = lineApi.url;
    instance = await serve(projectRoot, env, dataDir);
  }, 240_000);

  it('starts its embedded PostgreSQL and Temporal from nothing, and decides an album sent with the CLI', async () => {
    const { url, output } = instance!;
    expect(output()).toMatch(/PostgreSQL\s+postgresql:\/\/postgres@127\.0\.0\.1:\d+\/albumflow \(embedded/);
    expect(output()).not.toContain(fs.readFileSync(path.join(dataDir, 'postgres.password'), 'utf8'));
    const ready = await readiness(url);
    expect(ready.code).toBe(200);
    expect(ready.body.embedded.postgres).toMatchObject({ state: 'running', restarts: 0 });
    expect(ready.body.embedded.temporal).toMatchObject({ state: 'running', restarts: 0 });
    // Open to anyone, it says whether each runs, not its pid.
    expect(await (await fetch(`${url}/readyz`)).json()).toEqual({
      status: 'ready',
      checks: { database: 'ok', temporal: 'ok', mediaStore: 'ok' },
      embedded: { postgres: { state: 'running' }, temporal: { state: 'running' } },
    });

    for (const index of [1, 0]) {
      const file = path.join(dataDir, `cli-${index}.json`);
      fs.writeFileSync(
        file,
        JSON.stringify(albumEvent({ conversationId: 'conv', albumId: 'cli', messageId: `cli-${index}`, index, total: 2 })),
      );
      const sent = await execFile(
        process.execPath,
        [path.join(projectRoot, 'bin/albumflow.js'), 'send', file, '--workspace', workspace, '--secret', secret, '--url', url],
        { env },
      );
      expect(sent.stdout).toMatch(/^202 /);
    }
    expect((await decided(url, 'cli')).state).toBe('processed');

    // Without ALBUMFLOW_TOKEN: the CLI reads the admin token from the data directory, as the README's quick start has it.
    expect(env.ALBUMFLOW_TOKEN).toBeUndefined();
    const status = await npx(['status', workspace, 'whatsapp', 'acc_1', 'conv', 'cli', '--url', url]);
    expect(status.stdout).toContain('state:          processed');
    expect(status.stdout).toMatch(lastDecisionOf(['cli-0', 'cli-1']));
  }, 120_000);

  it('decides a Telegram album sent with the CLI, its photos downloaded from the fake Bot API, and shows it in the status API, the CLI and the Temporal UI', async () => {
    const { url, output } = instance!;
    const [first] = JSON.parse(fs.readFileSync(exampleAlbumFile, 'utf8')) as Array<{
      message: { chat: { id: number }; media_group_id: string };
    }>;
    const key = ['telegram', demoBot.id, String(first!.message.chat.id), first!.message.media_group_id];
    const messageIds = ['201', '202', '203'];

    const sent = await npx([
      'send',
      '--telegram',
      exampleAlbumFile,
      '--workspace',
      workspace,
      '--bot',
      demoBot.name,
      '--url',
      url,
      '--now',
    ]);
    expect(sent.stdout.trim().split('\n')).toEqual(photos.map((photo) => `200 update_id ${photo.updateId}`));

    // The status API: one album, decided, every photo downloaded as the fake served it.
    const album = await eventually(async () => {
      const status = await albumStatus(url, key.join('/'));
      expect(status?.decisions.at(-1)?.childMessageIds).toEqual(messageIds);
      expect(status?.media.downloaded).toBe(3);
      return status!;
    }, 90_000);
    expect([album.state, album.distinctChildren, album.children.map((child) => child.messageId)]).toEqual(['processed', 3, messageIds]);
    expect(album.children.map((child) => child.attachments)).toEqual(
      photos.map((photo) => [
        {
          position: 0,
          status: 'downloaded',
          contentType: 'image/jpeg',
          bytes: photo.content.length,
          sha256: crypto.createHash('sha256').update(photo.content).digest('hex'),
          error: null,
        },
      ]),
    );
    expect([botApi!.calls('getFile', demoBot.token).length, botApi!.calls('file', demoBot.token).length]).toEqual([3, 3]);

    // The CLI.
    const status = await npx(['status', workspace, ...key, '--url', url]);
    expect(status.stdout).toContain(`workflow id:    ${album.workflowId}`);
    expect(status.stdout).toContain('media:          3/3 downloaded, 0 pending');
    expect(status.stdout).toMatch(lastDecisionOf(messageIds));

    // The Temporal UI: its own API lists the workflow by its search attributes, as its workflow list shows them.
    const uiUrl = /Temporal UI\s+(http:\/\/\S+?)\/namespaces\//.exec(output())?.[1];
    expect(uiUrl, output()).toBeDefined();
    const query = encodeURIComponent(`AlbumWorkspace = "${workspace}" AND AlbumProvider = "telegram"`);
    await eventually(async () => {
      const response = await fetch(`${uiUrl}/api/v1/namespaces/default/workflows?query=${query}`);
      const body = (await response.json()) as {
        executions?: Array<{ execution: { workflowId: string }; searchAttributes: { indexedFields: Record<string, { data: string }> } }>;
      };
      expect(body.executions?.map((execution) => execution.execution.workflowId)).toEqual([album.workflowId]);
      const attributes = Object.fromEntries(
        Object.entries(body.executions![0]!.searchAttributes.indexedFields).map(([name, { data }]) => [
          name,
          JSON.parse(Buffer.from(data, 'base64').toString()) as unknown,
        ]),
      );
      expect(attributes).toMatchObject({
        AlbumWorkspace: workspace,
        AlbumProvider: 'telegram',
        AlbumState: 'processed',
        AlbumChildren: 3,
        AlbumNeedsReview: false,
      });
    }, 60_000);
    const workflowPage = `${uiUrl}/namespaces/default/workflows/${encodeURIComponent(album.workflowId)}`;
    expect((await fetch(workflowPage)).status).toBe(200);

    // `albumflow history` finds the embedded dev server on the ports it picked, and links that page.
    const history = await npx(['history', workspace, ...key, '--url', url]);
    expect(history.stdout).toContain(`Temporal UI: ${workflowPage}`);
    expect(history.stdout).toMatch(/Runs on 127\.0\.0\.1:\d+ \(default\):\n\s+\S+\s+RUNNING/);

    expect(output()).not.toContain(demoBot.token.split(':')[1]);
  }, 240_000);

  it('decides the LINE image set sent with the CLI (shuffled, one event redelivered, two in one request) by its total, downloaded from the fake LINE API, and shows it in the status API, the CLI and the Temporal UI', async () => {
    const { url, output } = instance!;
    const bodies = lineBodies(exampleImageSetFile);
    const first = bodies[0]!.events[0]! as unknown as { source: { groupId: string }; message: { imageSet: { id: string } } };
    const key = ['line', bodies[0]!.destination, first.source.groupId, first.message.imageSet.id];
    const byIndex = bodies
      .flatMap((body) => body.events as unknown as Array<{ message: { id: string; imageSet: { index: number } } }>)
      .map((event) => [event.message.imageSet.index, event.message.id] as const);
    const messageIds = [...new Map(byIndex)].sort(([a], [b]) => a - b).map(([, id]) => id);
    expect(messageIds).toHaveLength(4);

    const sent = await npx([
      'send',
      '--line',
      exampleImageSetFile,
      '--workspace',
      workspace,
      '--channel',
      demoChannel.name,
      '--url',
      url,
      '--now',
    ]);
    expect(sent.stdout.trim().split('\n')).toEqual(
      bodies.map((body) => `200 ${body.events.length} event${body.events.length === 1 ? '' : 's'}`),
    );

    const album = await eventually(async () => {
      const status = await albumStatus(url, key.map(encodeURIComponent).join('/'));
      expect(status?.decisions.at(-1)?.childMessageIds).toEqual(messageIds);
      expect(status?.media.downloaded).toBe(4);
      return status!;
    }, 90_000);
    expect([album.distinctChildren, album.decisions.map((d) => d.trigger), album.children.map((c) => c.index)]).toEqual([
      4,
      ['expected_count_reached'],
      [1, 2, 3, 4],
    ]);
    const served = new Map(images.map((image) => [image.messageId, image.content]));
    expect(album.children.map((child) => child.attachments[0]?.sha256)).toEqual(
      messageIds.map((id) => crypto.createHash('sha256').update(served.get(id)!).digest('hex')),
    );
    expect(lineApi!.calls('content').length).toBe(4);

    const status = await npx(['status', workspace, ...key, '--url', url]);
    expect(status.stdout).toContain(`workflow id:    ${album.workflowId}`);
    expect(status.stdout).toContain('media:          4/4 downloaded, 0 pending');
    expect(status.stdout).toMatch(lastDecisionOf(messageIds));

    const uiUrl = /Temporal UI\s+(http:\/\/\S+?)\/namespaces\//.exec(output())?.[1];
    const query = encodeURIComponent(`AlbumWorkspace = "${workspace}" AND AlbumProvider = "line"`);
    await eventually(async () => {
      const response = await fetch(`${uiUrl}/api/v1/namespaces/default/workflows?query=${query}`);
      const body = (await response.json()) as { executions?: Array<{ execution: { workflowId: string } }> };
      expect(body.executions?.map((execution) => execution.execution.workflowId)).toEqual([album.workflowId]);
    }, 60_000);
    expect((await fetch(`${uiUrl}/namespaces/default/workflows/${encodeURIComponent(album.workflowId)}`)).status).toBe(200);
    expect(output()).not.toContain(demoChannel.channelAccessToken);
  }, 240_000);

  it('refuses a second start on the same data directory at once, naming the running pid, and the first keeps working', async () => {
    const { url, pid } = instance!;
    const second = startInstance(projectRoot, env);
    expect(await second.exited).toBe(1);
    // Said once, in one line: a refusal that explains itself is not logged again as a fatal error with its stack.
    const said = second.output().split(`albumflow (pid ${pid}) is already running on ${dataDir}`).length - 1;
    expect(said).toBe(1);
    expect(second.output()).not.toContain('InstanceRunningError');

    expect((await readiness(url)).code).toBe(200);
    await postAlbum(url, 'after-second');
    await decided(url, 'after-second');
  }, 120_000);

  it.each([
    { id: 'temporal', name: 'the embedded Temporal dev server' },
    { id: 'postgres', name: 'the embedded PostgreSQL' },
  ] as const)(
    'restarts $name when it is killed under it, on the same state, and decides every child posted before and during',
    async ({ id, name }) => {
      const { url, output } = instance!;
      await postAlbum(url, `before-${id}`);
      await decided(url, `before-${id}`);

      const killed = (await readiness(url)).body.embedded[id].pid!;
      process.kill(killed, 'SIGKILL');
      await postAlbum(url, `during-${id}`);

      await eventually(async () => {
        const ready = await readiness(url);
        expect(ready.code).toBe(200);
        expect(ready.body.embedded[id]).toMatchObject({ state: 'running', restarts: 1 });
      }, 90_000);
      expect(output()).toContain(`${name} (pid ${killed}) was killed (SIGKILL) while albumflow runs; restarting it on the same state`);
      await decided(url, `during-${id}`);
      expect((await albumStatus(url, `before-${id}`))?.decisions.at(-1)?.childMessageIds).toEqual([`before-${id}-0`, `before-${id}-1`]);
    },
    240_000,
  );

  it('writes a heap snapshot on the signal Node is told to write one on, and keeps serving', async () => {
    const { url, pid } = instance!;
    const diagnostics = path.join(dataDir, 'diagnostics');
    fs.mkdirSync(diagnostics, { recursive: true });
    process.kill(pid, 'SIGUSR2');
    const snapshot = await eventually(() => {
      const written = fs.readdirSync(diagnostics).filter((name) => name.endsWith('.heapsnapshot'));
      expect(written).toHaveLength(1);
      return path.join(diagnostics, written[0]!);
    }, 30_000);
    // Written whole: a snapshot is one JSON document.
    await eventually(() => expect(() => JSON.parse(fs.readFileSync(snapshot, 'utf8')) as unknown).not.toThrow(), 30_000);

    await postAlbum(url, 'after-snapshot');
    await decided(url, 'after-snapshot');
    expect(isRunning(ownerOf(dataDir))).toBe(true);
    expect(ownerOf(dataDir).pid).toBe(pid);
    expect((await readiness(url)).code).toBe(200);
  }, 120_000);

  it('exits 0 on Ctrl-C leaving no server running, and the next start finds its albums', async () => {
    await postAlbum(instance!.url, 'before-ctrl-c');
    await decided(instance!.url, 'before-ctrl-c');
    const servers: ProcessIdentity[] = [serverRecord(dataDir, 'postgres'), serverRecord(dataDir, 'temporal.db')];
    expect(servers.every(isRunning)).toBe(true);
    expect(await interrupt(instance!)).toBe(0);
    instance = undefined;
    expect(servers.filter(isRunning)).toEqual([]);
    expect(servers.map((server) => findProcess((args) => args.includes(`albumflow-watchdog-${server.pid}`)))).toEqual([
      undefined,
      undefined,
    ]);
    expect(fs.readdirSync(dataDir).filter((name) => name.endsWith('.pid'))).toEqual([]);

    instance = await serve(projectRoot, env, dataDir);
    expect((await albumStatus(instance.url, 'before-ctrl-c'))?.decisions.at(-1)?.childMessageIds).toEqual([
      'before-ctrl-c-0',
      'before-ctrl-c-1',
    ]);
  }, 240_000);

  it('recognises the servers of an instance killed with kill -9 by their dead owner, stops them, and serves the same data', async () => {
    const dead = instance!;
    const postgres = serverRecord(dataDir, 'postgres');
    // With their watchdogs, as when every process but the servers is killed: else they stop the servers at once.
    killWatchdog(postgres.pid);
    killWatchdog(serverRecord(dataDir, 'temporal.db').pid);
    process.kill(dead.pid, 'SIGKILL');
    await dead.exited;
    instance = undefined;
    expect(postgres.owner.pid).toBe(dead.pid);
    // The postmaster outlives its owner.
    expect(isRunning(postgres)).toBe(true);

    instance = await serve(projectRoot, env, dataDir);
    expect(instance.output()).toContain(
      `stopping the embedded PostgreSQL (pid ${postgres.pid}) left running by albumflow pid ${dead.pid}, which is gone`,
    );
    expect(isRunning(postgres)).toBe(false);
    expect((await readiness(instance.url)).code).toBe(200);
    expect((await albumStatus(instance.url, 'during-postgres'))?.decisions.at(-1)?.childMessageIds).toEqual([
      'during-postgres-0',
      'during-postgres-1',
    ]);
  }, 240_000);

  it('exits 1 saying why when its embedded PostgreSQL dies and cannot be restarted, leaving no server running', async () => {
    const dying = instance!;
    const servers = [serverRecord(dataDir, 'postgres'), serverRecord(dataDir, 'temporal.db')];
    // Its data made unusable: every restart fails until albumflow gives up.
    const version = path.join(dataDir, 'postgres', 'PG_VERSION');
    const original = fs.readFileSync(version, 'utf8');
    fs.writeFileSync(version, '99\n');
    try {
      process.kill(servers[0]!.pid, 'SIGKILL');
      expect(await dying.exited).toBe(1);
    } finally {
      fs.writeFileSync(version, original);
    }
    instance = undefined;
    expect(dying.output()).toContain('albumflow cannot go on: exiting so that it can be started again');
    expect(dying.output()).toMatch(
      /the embedded PostgreSQL could not be restarted \(6 attempts; the last: the embedded PostgreSQL exited with code \d+ before it served:.*database files are incompatible with server/,
    );
    expect(servers.filter(isRunning)).toEqual([]);
    expect(fs.readdirSync(dataDir).filter((name) => name.endsWith('.pid'))).toEqual([]);
  }, 180_000);
});
