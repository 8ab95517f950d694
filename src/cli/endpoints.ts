// albumflow endpoint, deliveries and events: a workspace's outbound endpoints, their deliveries and the pull
// feed, through the API of a running albumflow (docs/api.md, "Endpoints" and "The pull feed"). The workspace
// `*` names the operator's routes (/admin/endpoints, a `*` token): every endpoint by its id, the environment
// endpoint (NOTIFY_URL, ep_environment) too.
import type { DeliveryInfo, DeliveryPageInfo, EndpointInfo } from '../http/endpoints.js';
import { disabledReasonText } from '../domain/endpoint-state.js';
import { say, terminalJson, terminalLines, terminalText } from '../common/terminal.js';
import { CliError, misuse, type Api } from './api.js';
import { plural, table } from './format.js';
import type { Values } from './options.js';

const segment = encodeURIComponent;
const json = (body: unknown) => ({ body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

/** The operator's workspace word: every endpoint, by id. */
const everyWorkspace = '*';

function args(rest: string[], count: number, words: string): string[] {
  if (rest.length !== count) throw misuse(`expected ${words}, got ${rest.length} argument${rest.length === 1 ? '' : 's'}`);
  return rest;
}

/** The endpoints of `workspace` (`*`: the operator's routes). */
const endpointsPath = (workspace: string) =>
  workspace === everyWorkspace ? '/admin/endpoints' : `/workspaces/${segment(workspace)}/endpoints`;
const endpointPath = (workspace: string, id: string) => `${endpointsPath(workspace)}/${segment(id)}`;

/** The workspace's own: adding, rotating and removing are a workspace's (the environment endpoint has none of them). */
function ownWorkspace(workspace: string, action: string): string {
  if (workspace === everyWorkspace)
    throw misuse(
      `endpoint ${action} takes the endpoint's workspace; the environment endpoint changes through NOTIFY_URL and NOTIFY_SECRET`,
    );
  return workspace;
}

function stateText(endpoint: EndpointInfo): string {
  return endpoint.enabled || endpoint.disabledReason === null
    ? 'enabled'
    : `disabled since ${endpoint.disabledAt ?? '?'}: ${disabledReasonText[endpoint.disabledReason]}`;
}

const typesText = (types: readonly string[] | null) => (types === null ? 'all' : types.join(', '));

export function formatEndpoint(endpoint: EndpointInfo): string {
  return terminalLines([
    `Endpoint ${endpoint.id}  (${endpoint.workspace === null ? 'the environment endpoint, every workspace' : `workspace ${endpoint.workspace}`})`,
    `url:            ${endpoint.url}`,
    ...(endpoint.description ? [`description:    ${endpoint.description}`] : []),
    `types:          ${typesText(endpoint.types)}`,
    `rate limit:     ${endpoint.rateLimit} a second`,
    `state:          ${stateText(endpoint)}`,
    `backlog:        ${plural(endpoint.backlog, 'delivery', 'deliveries')} pending or held${endpoint.oldestUndeliveredAt ? `, the oldest recorded ${endpoint.oldestUndeliveredAt}` : ''}`,
    `failed:         ${plural(endpoint.failed, 'delivery', 'deliveries')} with every attempt used`,
    `last success:   ${endpoint.lastSuccessAt ?? '-'}${endpoint.failingSince ? ` (failing since ${endpoint.failingSince})` : ''}`,
  ]);
}

function endpointTable(endpoints: EndpointInfo[]): string {
  if (endpoints.length === 0) return 'No endpoint.';
  const rows = endpoints.map((e) => [
    e.id,
    e.workspace ?? '* (NOTIFY_URL)',
    e.url,
    typesText(e.types),
    e.enabled ? 'enabled' : `disabled (${e.disabledReason ?? '?'})`,
    String(e.backlog),
    String(e.failed),
    e.lastSuccessAt ?? '-',
  ]);
  return terminalLines(table(['id', 'workspace', 'url', 'types', 'state', 'backlog', 'failed', 'last success'], rows));
}

/** The last attempt of a delivery, on one line: when, what came back, and the start of the answer. */
function lastAttempt(delivery: DeliveryInfo): string {
  const last = delivery.history.at(-1);
  if (!last) return '-';
  const outcome = last.statusCode !== null ? `HTTP ${last.statusCode}` : (last.error ?? 'no answer');
  const answer = last.response ? `: ${last.response.length > 60 ? `${last.response.slice(0, 60)}…` : last.response}` : '';
  return `${last.at} ${outcome}${answer}`;
}

export function formatDeliveries(page: DeliveryPageInfo): string {
  if (page.deliveries.length === 0) return 'No delivery.';
  const rows = page.deliveries.map((d) => [d.id, d.notificationId, d.type, d.state, String(d.attempts), lastAttempt(d)]);
  const more = page.next ? ['', `More: --cursor ${page.next}`] : [];
  return terminalLines([...table(['id', 'notification', 'type', 'state', 'attempts', 'last attempt'], rows), ...more]);
}

/** `albumflow endpoint add|list|show|disable|enable|rotate|remove|replay …` */
export async function endpointCommand(api: Api, values: Values, [action, ...rest]: string[]): Promise<void> {
  const print = (body: unknown, text: () => string) => say(values.json ? terminalJson(body) : text());
  switch (action) {
    case 'add': {
      const [workspace, url] = args(rest, 2, '<workspace> <url>') as [string, string];
      const rateLimit = values['rate-limit'] === undefined ? undefined : Number(values['rate-limit']);
      if (rateLimit !== undefined && !Number.isInteger(rateLimit))
        throw misuse(`--rate-limit must be a whole number, not "${values['rate-limit']}"`);
      const body = {
        url,
        ...(values.types === undefined ? {} : { types: values.types.split(',').map((type) => type.trim()) }),
        ...(values.description === undefined ? {} : { description: values.description }),
        ...(rateLimit === undefined ? {} : { rateLimit }),
      };
      const created = await api.expect<EndpointInfo & { secret: string }>(
        'POST',
        endpointsPath(ownWorkspace(workspace, 'add')),
        json(body),
      );
      return print(created, () =>
        [
          terminalText(`endpoint ${created.id} added to ${workspace}: ${created.url} (${typesText(created.types)})`),
          `secret: ${terminalText(created.secret)}`,
          '(shown once: the receiver verifies its webhooks with it, as any Standard Webhooks library does)',
        ].join('\n'),
      );
    }
    case 'list': {
      const [workspace] = args(rest, 1, '<workspace> (* for every endpoint)') as [string];
      const { endpoints } = await api.expect<{ endpoints: EndpointInfo[] }>('GET', endpointsPath(workspace));
      return print(endpoints, () => endpointTable(endpoints));
    }
    case 'show': {
      const [workspace, id] = args(rest, 2, '<workspace> <endpoint id>') as [string, string];
      const endpoint = await api.expect<EndpointInfo>('GET', endpointPath(workspace, id));
      return print(endpoint, () => formatEndpoint(endpoint));
    }
    case 'enable':
    case 'disable': {
      const [workspace, id] = args(rest, 2, '<workspace> <endpoint id>') as [string, string];
      const endpoint = await api.expect<EndpointInfo>('PATCH', endpointPath(workspace, id), json({ enabled: action === 'enable' }));
      return print(endpoint, () =>
        terminalText(
          action === 'enable'
            ? `endpoint ${endpoint.id} enabled: its ${plural(endpoint.backlog, 'held delivery', 'held deliveries')} go out in order`
            : `endpoint ${endpoint.id} disabled: its deliveries are held until it is enabled`,
        ),
      );
    }
    case 'rotate': {
      const [workspace, id] = args(rest, 2, '<workspace> <endpoint id>') as [string, string];
      const rotated = await api.expect<{ secret: string; previousSecretsExpireAt: string }>(
        'POST',
        `${endpointPath(ownWorkspace(workspace, 'rotate'), id)}/secret/rotate`,
      );
      return print(rotated, () =>
        [
          `secret: ${terminalText(rotated.secret)}`,
          terminalText(`(shown once; the secrets before sign beside it until ${rotated.previousSecretsExpireAt})`),
        ].join('\n'),
      );
    }
    case 'remove': {
      const [workspace, id] = args(rest, 2, '<workspace> <endpoint id>') as [string, string];
      await api.expect('DELETE', endpointPath(ownWorkspace(workspace, 'remove'), id));
      return say(terminalText(`endpoint ${id} removed from ${workspace}, with its deliveries`));
    }
    case 'replay': {
      const [workspace, id] = args(rest, 2, '<workspace> <endpoint id> --since ISO-TIME') as [string, string];
      if (values.since === undefined) throw misuse('endpoint replay needs --since ISO-TIME: every notification since then is sent again');
      const { replayed } = await api.expect<{ replayed: number }>(
        'POST',
        `${endpointPath(workspace, id)}/replay`,
        json({ since: values.since }),
      );
      return print({ replayed }, () =>
        terminalText(`${plural(replayed, 'delivery', 'deliveries')} of ${id} due again: they go out in order, in the background`),
      );
    }
    default:
      throw misuse(
        `unknown endpoint command "${terminalText([action, ...rest].join(' '))}" (there are: endpoint add, list, show, disable, enable, rotate, remove, replay)`,
      );
  }
}

/** `albumflow deliveries <workspace> <endpoint> [--state S] [--limit N] [--cursor C]`: newest first, with each one's last attempt. */
export async function deliveriesCommand(api: Api, values: Values, rest: string[]): Promise<void> {
  const [workspace, id] = args(rest, 2, '<workspace> <endpoint id>') as [string, string];
  const query = new URLSearchParams();
  if (values.state) query.set('state', values.state);
  if (values.limit) query.set('limit', values.limit);
  if (values.cursor) query.set('before', values.cursor);
  const page = await api.expect<DeliveryPageInfo>(
    'GET',
    `${endpointPath(workspace, id)}/deliveries${query.size ? `?${query.toString()}` : ''}`,
  );
  say(values.json ? terminalJson(page) : formatDeliveries(page));
}

interface FeedPage {
  events: Array<{ cursor: string } & Record<string, unknown>>;
  next: string;
}

/** How long one read of `events --follow` waits on the server (its most). */
const followWaitS = 30;
const retryAfterMs = 2_000;

/**
 * `albumflow events <workspace> [--after C] [--types a,b] [--limit N] [--follow]`: each event as a line of JSON
 * (`--json`: the page's body); `--follow` reads on with long polls until it is stopped (Ctrl-C), and waits out
 * an albumflow that cannot be reached.
 */
export async function eventsCommand(api: Api, values: Values, rest: string[]): Promise<void> {
  const [workspace] = args(rest, 1, '<workspace>') as [string];
  const path = (after: string | undefined, wait: number) => {
    const query = new URLSearchParams();
    if (after !== undefined) query.set('after', after);
    if (values.types) query.set('types', values.types);
    if (values.limit) query.set('limit', values.limit);
    if (wait > 0) query.set('wait', String(wait));
    return `/workspaces/${segment(workspace)}/events${query.size ? `?${query.toString()}` : ''}`;
  };
  if (!values.follow) {
    const page = await api.expect<FeedPage>('GET', path(values.after, 0));
    if (values.json) return say(terminalJson(page));
    for (const event of page.events) say(terminalJson(event, 0));
    return say(terminalText(`next: ${page.next} (albumflow events ${workspace} --after ${page.next})`), process.stderr);
  }
  let after = values.after;
  let waiting = false;
  for (;;) {
    let page: FeedPage;
    try {
      page = await api.expect<FeedPage>('GET', path(after, followWaitS));
    } catch (err) {
      // Unreachable (a restart): wait and read on from the same cursor; a refusal ends the command.
      if (!(err instanceof CliError) || !err.message.startsWith('cannot reach')) throw err;
      if (!waiting) say(`albumflow: ${err.message} Trying again every ${retryAfterMs / 1000} s.`, process.stderr);
      waiting = true;
      await new Promise((resolve) => setTimeout(resolve, retryAfterMs));
      continue;
    }
    waiting = false;
    for (const event of page.events) say(terminalJson(event, 0));
    after = page.next;
  }
}
