// `albumflow history`: a workflow's runs, from the Temporal server the albumflow it talks to uses, with
// the same connection settings as that albumflow and a link to its Temporal UI.

import type { Client } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { locateTemporalCli } from '../embedded/temporal-cli.js';
import { runningDevServer } from '../embedded/temporal.js';
import { connectClient, temporalConnectOptions } from '../temporal/connection.js';
import { temporalWorkflowUrl } from '../ui/paths.js';
import { cliConfig } from './api.js';
import { say, shellQuoted, terminalText } from '../common/terminal.js';

/** What the Temporal CLI assumes without `--address`. */
const temporalCliDefaultAddress = '127.0.0.1:7233';

export interface TemporalTarget {
  /** Where the connection goes, in words for people. */
  address: string;
  connectionOptions: NativeConnectionOptions;
  namespace: string;
  /** The Temporal UI's base URL; undefined when it is not known here. */
  uiUrl: string | undefined;
  /** Flags for the Temporal CLI's commands that name this server ('' for its defaults). */
  cliFlags: string;
}

/**
 * The Temporal server albumflow uses with this environment, read as albumflow reads it: with
 * TEMPORAL_ADDRESS, that server with the Temporal environment configuration (TEMPORAL_API_KEY,
 * TEMPORAL_TLS_*, TEMPORAL_PROFILE and its temporal.toml); without, the embedded dev server of the
 * albumflow running on DATA_DIR (its ports, also picked ones, from its record there), else
 * 127.0.0.1:TEMPORAL_PORT. The UI is TEMPORAL_UI_URL, else the embedded server's.
 */
export function temporalTarget(): TemporalTarget {
  const { dataDir, temporal } = cliConfig([
    'DATA_DIR',
    'TEMPORAL_ADDRESS',
    'TEMPORAL_NAMESPACE',
    'TEMPORAL_PORT',
    'TEMPORAL_UI_PORT',
    'TEMPORAL_UI_URL',
  ]);
  const namespace = temporal.namespace;
  const namespaceFlag = namespace === 'default' ? '' : ` --namespace ${namespace}`;
  if (temporal.address) {
    const { connectionOptions } = temporalConnectOptions(undefined);
    const address = connectionOptions.address ?? temporal.address;
    return { address, connectionOptions, namespace, uiUrl: temporal.uiUrl, cliFlags: ` --address ${address} --namespace ${namespace}` };
  }
  const running = runningDevServer(dataDir);
  const address = running?.address ?? `127.0.0.1:${temporal.port || 7233}`;
  const explicitUi = process.env.TEMPORAL_UI_URL ? temporal.uiUrl : undefined;
  return {
    address,
    connectionOptions: temporalConnectOptions(address).connectionOptions,
    namespace,
    uiUrl: explicitUi ?? running?.uiUrl ?? temporal.uiUrl,
    cliFlags: `${address === temporalCliDefaultAddress ? '' : ` --address ${address}`}${namespaceFlag}`,
  };
}

/**
 * The Temporal CLI as a command that runs as printed: `temporal` when it is on PATH, else the full path of the
 * one albumflow uses (TEMPORAL_CLI_PATH, the tool cache); undefined when none is installed here.
 */
async function temporalCommand(): Promise<string | undefined> {
  const cli = await locateTemporalCli({ allowBuild: false }).catch(() => undefined);
  if (cli?.kind !== 'binary') return undefined;
  return cli.source === 'PATH' ? 'temporal' : shellQuoted(cli.path);
}

/** The runs of one workflow: the Temporal CLI commands that show it, its Temporal UI page, and its runs. */
export async function printRuns(workflowId: string): Promise<void> {
  const target = temporalTarget();
  // The id holds what senders chose: on a line of its own making, escaped like every other value.
  const shown = terminalText(workflowId);
  const quoted = shellQuoted(workflowId);
  const temporal = await temporalCommand();
  say(
    [
      `workflow id: ${shown}`,
      '',
      temporal ? 'Inspect it with the Temporal CLI:' : 'Inspect it with the Temporal CLI (not installed here: npm run temporal:install):',
      `  ${temporal ?? 'temporal'} workflow describe --workflow-id ${quoted}${target.cliFlags}`,
      `  ${temporal ?? 'temporal'} workflow show --workflow-id ${quoted}${target.cliFlags}`,
      `  ${temporal ?? 'temporal'} workflow query --workflow-id ${quoted} --name status${target.cliFlags}`,
      '',
      target.uiUrl
        ? `Temporal UI: ${temporalWorkflowUrl(target.uiUrl, target.namespace, workflowId)}`
        : 'Temporal UI: not known here; set TEMPORAL_UI_URL to where your Temporal UI is.',
    ].join('\n'),
  );
  let client: Client | undefined;
  try {
    client = await connectClient(target.connectionOptions, target.namespace, 5_000);
    const runs: string[] = [];
    for await (const run of client.workflow.list({ query: `WorkflowId = "${workflowId.replace(/"/g, '\\"')}"` })) {
      runs.push(
        `  ${run.runId}  ${run.status.name.padEnd(10)}  started ${run.startTime.toISOString()}${run.closeTime ? `  closed ${run.closeTime.toISOString()}` : ''}`,
      );
    }
    say(
      `\nRuns on ${target.address} (${target.namespace}):\n${runs.length ? runs.join('\n') : '  none yet (the outbox has not handed the child to Temporal)'}`,
    );
  } catch (err) {
    say(
      `\nTemporal at ${target.address} is unreachable (${terminalText((err as Error).message)}). Set TEMPORAL_ADDRESS (with TEMPORAL_API_KEY, ` +
        'TEMPORAL_TLS_* or TEMPORAL_PROFILE as albumflow has them), or DATA_DIR to the data directory of the albumflow whose embedded server this is.',
    );
  } finally {
    await client?.connection.close();
  }
}
