import { exec } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeServerRecord } from '../../src/embedded/ownership.js';
import { devServerDbFile } from '../../src/embedded/temporal.js';
import { loadOrCreateAdminToken } from '../../src/http/access/admin-token.js';
import { messageWorkflowId } from '../../src/domain/keys.js';
import type { AlbumView } from '../../src/domain/types.js';
import { eventually } from '../harness/albums.js';
import { startMediaServer, type MediaServer } from '../harness/servers/media.js';
import { runCli, type CliRun } from '../harness/cli.js';
import { unique } from '../harness/random.js';
import { startStack, type Stack } from '../harness/stack.js';
import { albumEvent } from '../harness/events.js';

let stack: Stack;
let media: MediaServer;
let url: string;
const run = promisify(exec);
const conversation = unique('conv');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-cli-'));
/** The instance's data directory, holding the admin token as `npm start` generates it. */
const dataDir = path.join(tmp, 'data');
const noDataDir = path.join(tmp, 'no-data');
const adminToken = loadOrCreateAdminToken(dataDir).token;
const otherToken = unique('cli-every-workspace');
const elsewhereToken = unique('cli-elsewhere');

beforeAll(async () => {
  const API_TOKENS = JSON.stringify({ [adminToken]: ['*'], [otherToken]: ['*'], [elsewhereToken]: ['elsewhere'] });
  // Each CLI run is a process of its own, seconds apart on a busy machine: the albums with a total wait for it.
  stack = await startStack({ QUIET_PERIOD_MS: '300', MAX_WAIT_MS: '600000', LATE_WINDOW_MS: '600000', API_TOKENS });
  await stack.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;
  media = await startMediaServer();
});

afterAll(async () => {
  await stack.close();
  await media.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Never blocks this process's worker: the CLI runs in a process of its own, with the instance's data directory. */
function albumflow(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runCli(args, {
    ALBUMFLOW_URL: url,
    TEMPORAL_ADDRESS: stack.config.temporal.address,
    DATA_DIR: dataDir,
    ALBUMFLOW_TOKEN: '',
    ...env,
  });
}

function eventFile(messageId: string, index: number): string {
  return writeEvent(albumEvent({ conversationId: conversation, albumId: 'trip', messageId, index, total: 2 }));
}

function writeEvent(event: Record<string, unknown>): string {
  const file = path.join(tmp, `${unique('event')}.json`);
  fs.writeFileSync(file, JSON.stringify(event));
  return file;
}

/** Sends an event with the CLI, as a user would. */
async function send(event: Record<string, unknown>): Promise<void> {
  const sent = await albumflow(['send', writeEvent(event), '--workspace', stack.workspace, '--secret', stack.secret]);
  expect(sent.stderr).toBe('');
  expect(sent.code).toBe(0);
}

/** The album's status body, from the API in this process (a CLI process per poll is slow on a busy machine). */
async function statusOf(albumId: string): Promise<AlbumView> {
  const response = await stack.app.inject({
    method: 'GET',
    url: `/workspaces/${encodeURIComponent(stack.workspace)}/albums/whatsapp/acc_1/${encodeURIComponent(conversation)}/${encodeURIComponent(albumId)}`,
    headers: { authorization: `Bearer ${adminToken}` },
  });
  expect(response.statusCode).toBe(200);
  return response.json<AlbumView>();
}

// Each `albumflow` call is a new Node process that compiles the CLI's TypeScript (about 2 CPU-seconds), and a
// test makes up to eight: on a machine busy with other work that takes minutes, so these tests get more time
// than the suite's default. Nothing here is about speed.
const cliTestTimeoutMs = 240_000;

describe('albumflow CLI against a running server', { timeout: cliTestTimeoutMs }, () => {
  it('send signs and posts events; status shows the album as a table and as JSON', async () => {
    for (const [messageId, index] of [
      ['p2', 1],
      ['p1', 0],
    ] as const) {
      const sent = await albumflow(['send', eventFile(messageId, index), '--workspace', stack.workspace, '--secret', stack.secret]);
      expect(sent.stderr).toBe('');
      expect(sent.code).toBe(0);
      expect(sent.stdout).toMatch(/^202 .*"status":"accepted"/);
    }

    const keyArgs = [stack.workspace, 'whatsapp', 'acc_1', conversation, 'trip'];
    const json = await eventually(async () => {
      const result = await albumflow(['status', ...keyArgs, '--json']);
      expect(result.code).toBe(0);
      const body = JSON.parse(result.stdout) as AlbumView;
      expect(body.decisions).toHaveLength(1);
      return body;
    });
    expect(json).toMatchObject({
      distinctChildren: 2,
      expectedTotal: 2,
      decisions: [{ trigger: 'expected_count_reached', childMessageIds: ['p1', 'p2'] }],
    });

    const table = await albumflow(['status', ...keyArgs]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain(`workflow id:    ${json.workflowId}`);
    expect(table.stdout).toContain('children:       2 of 2 expected (reached)');
    expect(table.stdout).toMatch(/1\s+expected_count_reached\s+\S+\s+p1, p2/);

    const list = await albumflow(['list', stack.workspace]);
    expect(list.stdout).toMatch(/processed\s+2\s+-\s+whatsapp\/acc_1\/.+\/trip/);
    const review = await albumflow(['list', stack.workspace, '--review']);
    expect(review.stdout.trim()).toBe('No albums.');

    const history = await albumflow(['history', ...keyArgs]);
    expect(history.code).toBe(0);
    expect(history.stdout).toContain(`workflow id: ${json.workflowId}`);
    expect(history.stdout).toContain(`workflow query --workflow-id '${json.workflowId}' --name status`);
    expect(history.stdout).toMatch(/Runs on .*:\n\s+\S+\s+(RUNNING|COMPLETED)/);
    // The query line works as printed, in a shell whose PATH has no Temporal CLI: it names the one albumflow uses.
    const queryLine = history.stdout
      .split('\n')
      .find((line) => line.includes('workflow query'))!
      .trim();
    const queried = await run(queryLine, { shell: '/bin/sh', env: { ...process.env, PATH: '/usr/bin:/bin' }, timeout: 30_000 });
    expect(queried.stdout).toContain('distinctChildren');
  });

  it('status prints a caption that holds terminal controls escaped, in the table and in JSON', async () => {
    const albumId = unique('controls');
    const caption =
      'clear\x1b[2J\x1b[H link \x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ bell\x07 forged\nrow csi\x9b31m rlo\u202egpj.exe';
    await send(albumEvent({ conversationId: conversation, albumId, messageId: `${albumId}-0`, index: 0, total: 1, text: caption }));
    await eventually(async () => expect((await statusOf(albumId)).decisions).toHaveLength(1));
    const keyArgs = [stack.workspace, 'whatsapp', 'acc_1', conversation, albumId];
    // eslint-disable-next-line no-control-regex
    const actedOn = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

    const table = await albumflow(['status', ...keyArgs]);
    expect(table.code).toBe(0);
    expect(table.stdout).not.toMatch(actedOn);
    expect(table.stdout).toContain(
      'clear\\x1b[2J\\x1b[H link \\x1b]8;;https://evil.example/\\x1b\\click\\x1b]8;;\\x1b\\ bell\\x07 forged\\nrow csi\\x9b31m rlo\\u202egpj.exe',
    );
    // One line per child under the table's header: the caption's line break forged none.
    const lines = table.stdout.split('\n');
    const header = lines.findIndex((line) => line.startsWith('index'));
    expect(lines[header + 2]).toMatch(new RegExp(`^0\\s+${albumId}-0\\s+clear`));
    expect(lines[header + 3]).toBe('');

    const json = await albumflow(['status', ...keyArgs, '--json']);
    expect(json.code).toBe(0);
    expect(json.stdout).not.toMatch(actedOn);
    expect((JSON.parse(json.stdout) as AlbumView).children[0]?.caption).toBe(caption);
  });

  it('says clearly when the album is unknown, the request is refused or the server is unreachable', async () => {
    const missing = await albumflow(['status', stack.workspace, 'whatsapp', 'acc_1', conversation, 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('404 album_not_found');

    const unsigned = await albumflow(['send', eventFile('p3', 2), '--workspace', stack.workspace, '--secret', 'wrong']);
    expect(unsigned.code).toBe(1);
    expect(unsigned.stderr).toContain('401 invalid_signature');
    expect(unsigned.stderr).not.toContain('sent unsigned');

    const noSecret = await albumflow(['send', eventFile('p3', 2), '--workspace', stack.workspace], {
      ALBUMFLOW_SECRET: '',
      WORKSPACE_SECRETS: '',
    });
    expect(noSecret.code).toBe(1);
    expect(noSecret.stderr).toContain('401 missing_signature');
    expect(noSecret.stderr).toContain(
      `The event was sent unsigned: no --secret was given, nor ALBUMFLOW_SECRET, and WORKSPACE_SECRETS here names no secret of "${stack.workspace}"`,
    );

    const down = await albumflow(['list', stack.workspace], { ALBUMFLOW_URL: 'http://127.0.0.1:9' });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot reach albumflow at http://127.0.0.1:9');

    const usage = await albumflow(['status', 'only-one']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('expected 5 arguments');
  });

  it('prints its usage for help, --help and no command, and one line for a command line it cannot run', async () => {
    for (const args of [['help'], ['--help'], ['-h'], ['status', '--help']]) {
      const help = await albumflow(args);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain('Usage:');
      // Each option is explained once: the names each line of the Options section starts with.
      const options = help.stdout.split('\nOptions:\n')[1]!.split('\n\n')[0]!;
      const defined = options
        .split('\n')
        .filter((line) => /^ {2}-/.test(line))
        .flatMap(
          (line) =>
            line
              .slice(2)
              .split(/ {2,}/)[0]!
              .match(/--[a-z-]+/g) ?? [],
        );
      expect(defined).toContain('--secret');
      expect(defined.filter((name, i) => defined.indexOf(name) !== i)).toEqual([]);
    }
    const none = await albumflow([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Usage:');

    for (const args of [['list', stack.workspace, '--frobnicate'], ['frobnicate'], ['list']]) {
      const wrong = await albumflow(args);
      expect(wrong.code).toBe(2);
      expect(wrong.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(wrong.stderr.trimEnd()).toMatch(/^albumflow: .+ \(albumflow help\)$/);
      expect(wrong.stderr).not.toContain('    at ');
    }
  });

  it("shows a standalone message's workflow in history, counts deliveries in words, and calls an over-full album what it is", async () => {
    const solo = unique('solo');
    const file = path.join(tmp, `${solo}.json`);
    fs.writeFileSync(file, JSON.stringify(albumEvent({ conversationId: conversation, messageId: solo })));
    for (let i = 0; i < 1; i++)
      expect((await albumflow(['send', file, '--workspace', stack.workspace, '--secret', stack.secret])).code).toBe(0);
    const history = await eventually(async () => {
      const result = await albumflow(['history', stack.workspace, 'whatsapp', 'acc_1', conversation, solo]);
      expect(result.stdout).toMatch(/Runs on .*:\n\s+\S+\s+(RUNNING|COMPLETED)/);
      return result;
    });
    expect(history.stdout).toContain(`workflow id: message:${encodeURIComponent(stack.workspace)}:whatsapp:acc_1:${conversation}:${solo}`);

    const message = await albumflow(['message', stack.workspace, 'whatsapp', 'acc_1', conversation, solo]);
    expect(message.stdout).toContain('(1 delivery, last');

    const crowded = unique('crowded');
    for (const [id, index] of [
      ['a', 0],
      ['b', 1],
      ['c', 2],
    ] as const) {
      const f = path.join(tmp, `${crowded}-${id}.json`);
      fs.writeFileSync(
        f,
        JSON.stringify(albumEvent({ conversationId: conversation, albumId: crowded, messageId: `${crowded}-${id}`, index, total: 2 })),
      );
      expect((await albumflow(['send', f, '--workspace', stack.workspace, '--secret', stack.secret])).code).toBe(0);
    }
    const status = await eventually(async () => {
      const result = await albumflow(['status', stack.workspace, 'whatsapp', 'acc_1', conversation, crowded]);
      expect(result.stdout).toContain('children:       3, more than the 2 expected');
      return result;
    });
    expect(status.stdout).not.toContain('(reached)');
  });

  it('retry-downloads fetches an expired attachment again once its server answers', async () => {
    const albumId = unique('retry');
    const file = `/${unique('broken')}.jpg`;
    await send(
      albumEvent({
        conversationId: conversation,
        albumId,
        messageId: `${albumId}-0`,
        index: 0,
        total: 1,
        attachments: [{ type: 'image', url: media.url(file) }],
      }),
    );
    await eventually(async () =>
      expect((await statusOf(albumId)).children[0]?.attachments[0]).toMatchObject({ status: 'expired', error: 'HTTP 404' }),
    );

    media.serve(file, `photo ${file}`);
    const retried = await albumflow(['retry-downloads', stack.workspace, 'whatsapp', 'acc_1', conversation, albumId]);
    expect(retried.stderr).toBe('');
    expect(retried.code).toBe(0);
    expect(retried.stdout.trim()).toBe('1 attachment set back to pending; their downloads are starting');
    const downloaded = await eventually(async () => {
      const body = await statusOf(albumId);
      expect(body.children[0]?.attachments[0]).toMatchObject({ status: 'downloaded', error: null });
      return body;
    });
    expect(downloaded.media).toMatchObject({ downloaded: 1, expired: 0 });
    expect(media.fetches.filter((fetched) => fetched.path === file)).toHaveLength(2);
  }, 120_000);

  it('resolve-review takes an album out of the review queue with its note', async () => {
    const albumId = unique('review');
    for (const messageId of [`${albumId}-a`, `${albumId}-b`])
      await send(albumEvent({ conversationId: conversation, albumId, messageId, index: 0, total: 3 }));
    await eventually(async () => expect((await statusOf(albumId)).review).toEqual({ required: true, reasons: ['duplicate_index'] }));
    // The status view shows the workflow's review at once; the list reads the album's row, which the decision's activity writes after.
    await eventually(async () => {
      const queued = await albumflow(['list', stack.workspace, '--review', '--json']);
      expect(queued.stdout).toContain(albumId);
    });

    const resolved = await albumflow([
      'resolve-review',
      stack.workspace,
      'whatsapp',
      'acc_1',
      conversation,
      albumId,
      '--note',
      'same photo twice, fine',
    ]);
    expect(resolved.stderr).toBe('');
    expect(resolved.code).toBe(0);
    const at = /^review resolved at (\S+): same photo twice, fine$/.exec(resolved.stdout.trim())?.[1];
    expect(at, resolved.stdout).toBeDefined();

    expect((await statusOf(albumId)).review).toEqual({
      required: false,
      reasons: ['duplicate_index'],
      resolved: { at, note: 'same photo twice, fine' },
    });
    const table = await albumflow(['status', stack.workspace, 'whatsapp', 'acc_1', conversation, albumId]);
    expect(table.stdout).toContain(`review:         resolved at ${at} (same photo twice, fine): duplicate_index`);
    expect((await albumflow(['list', stack.workspace, '--review', '--json'])).stdout).not.toContain(albumId);
  }, 120_000);

  it('prints a refused operator action as one line and exits 1: an album with nothing to review, an album whose workflow is closed', async () => {
    const albumId = unique('closed');
    await send(albumEvent({ conversationId: conversation, albumId, messageId: `${albumId}-0`, index: 0, total: 1 }));
    const decided = await eventually(async () => {
      const body = await statusOf(albumId);
      expect(body.decisions).toHaveLength(1);
      return body;
    });
    const keyArgs = [stack.workspace, 'whatsapp', 'acc_1', conversation, albumId];

    const nothingToReview = await albumflow(['resolve-review', ...keyArgs, '--note', 'nothing']);
    expect(nothingToReview.code).toBe(1);
    expect(nothingToReview.stdout).toBe('');
    expect(nothingToReview.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(nothingToReview.stderr).toMatch(/^albumflow: 409 review_not_required: /);

    // This stack's late window is long: the album's workflow is closed here by terminating it.
    await stack.client.workflow.getHandle(decided.workflowId).terminate('closed for the CLI test');
    const closed = await albumflow(['retry-downloads', ...keyArgs]);
    expect(closed.code).toBe(1);
    expect(closed.stdout).toBe('');
    expect(closed.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(closed.stderr.trimEnd()).toBe("albumflow: 409 album_closed: the album's workflow is closed: nothing can be retried");
  }, 120_000);

  it('erase album removes the album, waits for it and prints the counts; erasure shows it; status then answers not found', async () => {
    const albumId = unique('erase');
    for (const [messageId, index] of [
      [`${albumId}-0`, 0],
      [`${albumId}-1`, 1],
    ] as const)
      await send(albumEvent({ conversationId: conversation, albumId, messageId, index, total: 2 }));
    await eventually(async () => expect((await statusOf(albumId)).decisions).toHaveLength(1));
    const keyArgs = [stack.workspace, 'whatsapp', 'acc_1', conversation, albumId];

    const erased = await albumflow(['erase', 'album', ...keyArgs]);
    expect(erased.stderr).toBe('');
    expect(erased.code).toBe(0);
    const id = /^Erasure (\S+) {2}\(album, workspace /.exec(erased.stdout)?.[1];
    expect(id, erased.stdout).toBeDefined();
    expect(erased.stdout).toMatch(/^state: +done at \S+$/m);
    expect(erased.stdout).toMatch(/^albums +1$/m);
    expect(erased.stdout).toMatch(/^messages +2$/m);
    expect(erased.stdout).toMatch(/^tombstones \(a redelivery is not stored\) +2$/m);
    expect(erased.stdout).toMatch(/^workflows deleted from Temporal +1$/m);

    const shown = await albumflow(['erasure', stack.workspace, id!, '--json']);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id, state: 'done', scope: 'album', counts: { albums: 1, messages: 2 } });

    const gone = await albumflow(['status', ...keyArgs]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('404 album_not_found');
    const again = await albumflow(['erase', 'album', ...keyArgs, '--no-wait']);
    expect(again.code).toBe(1);
    expect(again.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(again.stderr).toContain('404 album_not_found');
    const unknown = await albumflow(['erasure', stack.workspace, '00000000-0000-4000-8000-000000000000']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('404 erasure_not_found');

    const conversationId = unique('erase-conv');
    const started = await albumflow(['erase', 'conversation', stack.workspace, 'whatsapp', 'acc_1', conversationId, '--no-wait', '--json']);
    expect(started.code).toBe(0);
    const body = JSON.parse(started.stdout) as { id: string; state: string };
    expect(body.state).toBe('running');
    expect(body.id).toMatch(/^[0-9a-f-]{36}$/);

    const usage = await albumflow(['erase', 'album', stack.workspace, 'whatsapp']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('erase album takes 5 arguments');
  }, 120_000);

  it('erase workspace removes the workspace and everything of it, waits and prints the counts; the name can then be added again', async () => {
    const workspace = unique('cli-offboarded');
    const secret = 'cli-offboarded-signing-secret';
    expect((await albumflow(['workspace', 'add', workspace])).code).toBe(0);
    expect((await albumflow(['secret', 'add', workspace, '--secret', secret])).code).toBe(0);
    const event = albumEvent({ conversationId: unique('c'), messageId: 'note', text: 'a caption to forget', attachments: [] });
    const sent = await albumflow(['send', writeEvent(event), '--workspace', workspace, '--secret', secret]);
    expect(sent.code, sent.stderr).toBe(0);
    await eventually(async () => {
      const { rows } = await stack.pool.query(`SELECT 1 FROM messages WHERE workspace = $1`, [workspace]);
      expect(rows).toHaveLength(1);
    });

    const refused = await albumflow(['erase', 'workspace', workspace], { ALBUMFLOW_TOKEN: elsewhereToken });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('403');
    const erased = await albumflow(['erase', 'workspace', workspace]);
    expect(erased.stderr).toBe('');
    expect(erased.code).toBe(0);
    expect(erased.stdout).toMatch(new RegExp(`^Erasure \\S+ {2}\\(workspace, workspace ${workspace}\\)$`, 'm'));
    expect(erased.stdout).toMatch(/^state: +done at \S+$/m);
    expect(erased.stdout).toMatch(/^messages +1$/m);
    expect(erased.stdout).toMatch(/^workflows deleted from Temporal +1$/m);
    expect((await stack.pool.query(`SELECT 1 FROM messages WHERE workspace = $1`, [workspace])).rows).toEqual([]);
    const added = await albumflow(['workspace', 'add', workspace]);
    expect(added.code, added.stderr).toBe(0);

    const usage = await albumflow(['erase', 'workspace']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('erase workspace takes 1 argument (<workspace>), got 0');
  }, 120_000);

  it("workspace retention sets a workspace's retention, keeps everything with forever, and follows RETENTION_DAYS again with default", async () => {
    const stored = async () =>
      (await stack.pool.query<{ days: string | null }>(`SELECT days FROM workspace_retention WHERE workspace = $1`, [stack.workspace]))
        .rows;
    const set = await albumflow(['workspace', 'retention', stack.workspace, '30.5']);
    expect(set.stderr).toBe('');
    expect(set.stdout.trim()).toBe(`workspace ${stack.workspace} keeps closed albums 30.5 days`);
    expect(await stored()).toEqual([{ days: '30.5' }]);
    const forever = await albumflow(['workspace', 'retention', stack.workspace, 'forever']);
    expect(forever.stdout.trim()).toBe(`workspace ${stack.workspace} keeps everything`);
    expect(await stored()).toEqual([{ days: null }]);
    const reset = await albumflow(['workspace', 'retention', stack.workspace, 'default']);
    expect(reset.code).toBe(0);
    expect(await stored()).toEqual([]);
    const wrong = await albumflow(['workspace', 'retention', stack.workspace, '0']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('retention must be a number of days above 0, forever or default');
    const unknown = await albumflow(['workspace', 'retention', 'no-such-workspace', '7']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('404 workspace_not_found');
  });

  it('sends ALBUMFLOW_TOKEN, else the admin token file, and says in one line what to set when refused', async () => {
    const list = ['list', stack.workspace];
    const fromFile = await albumflow(list);
    expect(fromFile.stderr).toBe('');
    expect(fromFile.code).toBe(0);
    const fromVariable = await albumflow(list, { ALBUMFLOW_TOKEN: otherToken, DATA_DIR: noDataDir });
    expect(fromVariable.stderr).toBe('');
    expect(fromVariable.code).toBe(0);
    expect(fromVariable.stdout).toBe(fromFile.stdout);

    const refusals: Array<[Record<string, string>, RegExp]> = [
      [{ DATA_DIR: noDataDir }, /^albumflow: 401 missing_token: .*Set ALBUMFLOW_TOKEN .*no-data\/admin-token/],
      [
        { ALBUMFLOW_TOKEN: unique('cli-unknown-token') },
        /^albumflow: 401 invalid_token: .*from ALBUMFLOW_TOKEN is not accepted \(unknown, revoked or expired\): set ALBUMFLOW_TOKEN/,
      ],
      [
        { ALBUMFLOW_TOKEN: elsewhereToken },
        /^albumflow: 403 workspace_not_allowed: the token does not reach this workspace\. The token from ALBUMFLOW_TOKEN does not reach what this asks for: set ALBUMFLOW_TOKEN to one whose workspaces include it, one of the server's API_TOKENS, or one made with `albumflow token create`/,
      ],
    ];
    // A route of every workspace: the server says it needs "*", the hint does not speak of "this workspace".
    const everyWorkspace = await albumflow(['workspace', 'list'], { ALBUMFLOW_TOKEN: elsewhereToken });
    expect(everyWorkspace.stderr).toContain('this route needs a token that reaches every workspace ("*")');
    expect(everyWorkspace.stderr).not.toContain('this workspace');
    for (const [env, message] of refusals) {
      const refused = await albumflow(list, env);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(refused.stderr).toMatch(message);
      expect(refused.stderr).not.toContain(env.ALBUMFLOW_TOKEN ?? adminToken);
    }
  });
});

describe('albumflow history reaches Temporal as albumflow does', { timeout: cliTestTimeoutMs }, () => {
  const solo = unique('history');
  let id: string;
  let port: string;
  const args = () => ['history', stack.workspace, 'whatsapp', 'acc_1', conversation, solo];
  const runsListed = (address: string) =>
    new RegExp(`Runs on ${address.replace(/\./g, '\\.')} \\(default\\):\\n\\s+\\S+\\s+(RUNNING|COMPLETED)`);
  const uiLink = (uiUrl: string) => `Temporal UI: ${uiUrl}/namespaces/default/workflows/${encodeURIComponent(id)}`;

  beforeAll(async () => {
    expect((await stack.post(albumEvent({ conversationId: conversation, messageId: solo }))).statusCode).toBe(202);
    id = messageWorkflowId({
      workspace: stack.workspace,
      provider: 'whatsapp',
      accountId: 'acc_1',
      conversationId: conversation,
      messageId: solo,
    });
    await eventually(() => stack.client.workflow.getHandle(id).describe());
    port = stack.config.temporal.address!.split(':').at(-1)!;
  });

  it('with TEMPORAL_ADDRESS, lists the runs there and links TEMPORAL_UI_URL, or says it knows no UI', async () => {
    const linked = await albumflow(args(), { TEMPORAL_UI_URL: 'https://temporal.example.com/ui/' });
    expect(linked.code).toBe(0);
    expect(linked.stdout).toMatch(runsListed(stack.config.temporal.address!));
    expect(linked.stdout).toContain(uiLink('https://temporal.example.com/ui'));
    expect(linked.stdout).toContain(`--address ${stack.config.temporal.address} --namespace default`);

    const unlinked = await albumflow(args());
    expect(unlinked.stdout).toContain('Temporal UI: not known here; set TEMPORAL_UI_URL');
    expect(unlinked.stdout).not.toContain('8233');
  });

  it('with TEMPORAL_ADDRESS, connects with the API key and TLS settings of the Temporal environment configuration', async () => {
    // A gRPC endpoint that records what it is sent and refuses it.
    const seen: http2.IncomingHttpHeaders[] = [];
    const grpc = http2.createServer();
    grpc.on('stream', (h2, headers) => {
      seen.push(headers);
      h2.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '14', 'grpc-message': 'refused by the test' },
        { endStream: true },
      );
    });
    // A TCP server that keeps the first bytes it gets: a TLS client starts with a handshake record (0x16).
    const firstBytes: Buffer[] = [];
    const tcp = net.createServer((socket) =>
      socket.once('data', (chunk: Buffer) => {
        firstBytes.push(chunk);
        socket.destroy();
      }),
    );
    await Promise.all([grpc, tcp].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
    const address = (server: net.Server | http2.Http2Server) => `127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const keyed = await albumflow(args(), {
        TEMPORAL_ADDRESS: address(grpc),
        TEMPORAL_API_KEY: 'cli-test-api-key',
        TEMPORAL_TLS: 'false',
        TEMPORAL_NAMESPACE: 'elsewhere',
      });
      expect(keyed.code).toBe(0);
      expect(keyed.stdout).toContain(`Temporal at ${address(grpc)} is unreachable`);
      expect(seen.length).toBeGreaterThan(0);
      expect(seen[0]).toMatchObject({ authorization: 'Bearer cli-test-api-key' });

      const tls = await albumflow(args(), { TEMPORAL_ADDRESS: address(tcp), TEMPORAL_TLS: 'true' });
      expect(tls.stdout).toContain(`Temporal at ${address(tcp)} is unreachable`);
      expect(firstBytes[0]?.[0]).toBe(0x16);
    } finally {
      grpc.close();
      tcp.close();
    }
  });

  it('without TEMPORAL_ADDRESS, reaches the embedded dev server of the albumflow running on DATA_DIR, also on ports it picked', async () => {
    const running = path.join(tmp, 'running');
    fs.mkdirSync(running, { recursive: true });
    // What `npm start` records for its dev server (here, one whose frontend is the test run's Temporal), with this process standing for it.
    writeServerRecord(`${devServerDbFile(running)}.pid`, process.pid, [Number(port), 18233]);
    const embedded = { TEMPORAL_ADDRESS: '', ALBUMFLOW_TOKEN: adminToken, DATA_DIR: running, TEMPORAL_PORT: '1', TEMPORAL_UI_PORT: '1' };
    const recorded = await albumflow(args(), embedded);
    expect(recorded.code).toBe(0);
    expect(recorded.stdout).toMatch(runsListed(`127.0.0.1:${port}`));
    expect(recorded.stdout).toContain(uiLink('http://127.0.0.1:18233'));
    expect(recorded.stdout).toContain(`--name status --address 127.0.0.1:${port}\n`);
    const linked = await albumflow(args(), { ...embedded, TEMPORAL_UI_URL: 'https://temporal.example.com' });
    expect(linked.stdout).toContain(uiLink('https://temporal.example.com'));

    // None runs there: the ports albumflow would give it.
    const configured = await albumflow(args(), { ...embedded, DATA_DIR: noDataDir, TEMPORAL_PORT: port, TEMPORAL_UI_PORT: '18234' });
    expect(configured.code).toBe(0);
    expect(configured.stdout).toMatch(runsListed(`127.0.0.1:${port}`));
    expect(configured.stdout).toContain(uiLink('http://127.0.0.1:18234'));
  });
});
