// albumflow erase and albumflow erasure: erasure on request (docs/api.md, "Erasure"). The DELETE starts it;
// by default the command then follows its progress until it is done and prints what was removed.
import type { Api } from './api.js';
import { misuse } from './api.js';
import { formatErasure, type ErasureProgress } from './format.js';
import type { Values } from './options.js';
import { say, terminalJson, terminalText } from '../common/terminal.js';

/** How often a waiting `erase` asks for the erasure's progress. */
const pollMs = 500;

const words = {
  album: ['<workspace>', '<provider>', '<account>', '<conversation>', '<album>'],
  message: ['<workspace>', '<provider>', '<account>', '<conversation>', '<message>'],
  conversation: ['<workspace>', '<provider>', '<account>', '<conversation>'],
  workspace: ['<workspace>'],
} as const;

type Scope = keyof typeof words;

const isScope = (word: string | undefined): word is Scope => word !== undefined && Object.hasOwn(words, word);

/**
 * The DELETE route of what is erased: `/workspaces/<ws>/<albums|messages|conversations>/<provider>/…`, or a
 * whole workspace's `/admin/workspaces/<ws>/data` (a "*" token's).
 */
function erasurePath(scope: Scope, parts: string[]): string {
  const expected = words[scope];
  if (parts.length !== expected.length) {
    const noun = expected.length === 1 ? 'argument' : 'arguments';
    throw misuse(`erase ${scope} takes ${expected.length} ${noun} (${expected.join(' ')}), got ${parts.length}`);
  }
  const [workspace, ...rest] = parts.map((part) => encodeURIComponent(part));
  if (scope === 'workspace') return `/admin/workspaces/${workspace}/data`;
  return `/workspaces/${workspace}/${scope}s/${rest.join('/')}`;
}

const progressPath = (workspace: string, id: string) => `/workspaces/${encodeURIComponent(workspace)}/erasures/${encodeURIComponent(id)}`;

function print(values: Values, body: unknown, text: () => string): void {
  say(values.json ? terminalJson(body) : text());
}

/** Polls the erasure until it is done; its last progress. */
async function waitForErasure(api: Api, workspace: string, id: string): Promise<ErasureProgress> {
  for (;;) {
    const progress = await api.expect<ErasureProgress>('GET', progressPath(workspace, id));
    if (progress.state === 'done') return progress;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** `albumflow erase album|message|conversation|workspace …` */
export async function eraseCommand(api: Api, values: Values, rest: string[]): Promise<void> {
  const [scope, ...parts] = rest;
  if (scope === undefined) {
    throw misuse('erase takes what to erase: erase album, erase message, erase conversation or erase workspace');
  }
  if (!isScope(scope)) {
    throw misuse(
      `unknown erase command "${terminalText(rest.join(' '))}" (there are: erase album, erase message, erase conversation, erase workspace)`,
    );
  }
  const workspace = parts[0] ?? '';
  const started = await api.expect<{ id: string; state: 'running' }>('DELETE', erasurePath(scope, parts));
  if (values['no-wait']) {
    return print(values, started, () =>
      [`erasure ${started.id} started`, `follow it: albumflow erasure ${workspace} ${started.id}`].join('\n'),
    );
  }
  const progress = await waitForErasure(api, workspace, started.id);
  return print(values, progress, () => formatErasure(progress, workspace));
}

/** `albumflow erasure <workspace> <id>`: one erasure's progress, as it is now. */
export async function erasureCommand(api: Api, values: Values, rest: string[]): Promise<void> {
  if (rest.length !== 2) throw misuse(`erasure takes 2 arguments (<workspace> <id>), got ${rest.length}`);
  const [workspace, id] = rest as [string, string];
  const progress = await api.expect<ErasureProgress>('GET', progressPath(workspace, id));
  return print(values, progress, () => formatErasure(progress, workspace));
}
