// The S3-compatible server of the tests: the Versity S3 Gateway (src/cluster/versions.ts) on its posix
// back end, from the tool cache (built there when missing), on a port picked now and a directory of its
// own; stoppable and restartable on the same address and objects (the fault tests stop it mid-load).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { locateS3Server } from '../../../tools/cluster/s3-server.js';
import { pickPort } from '../../../src/embedded/ports.js';

export interface S3Server {
  /** AWS_ENDPOINT_URL_S3. */
  endpoint: string;
  /** The one account's keys (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY). */
  accessKeyId: string;
  secretAccessKey: string;
  /** The directory its buckets are folders of. */
  root: string;
  /** Creates a bucket (a folder of the posix back end). */
  createBucket(name: string): string;
  /** The environment that points the AWS SDK at this server. */
  env(): Record<string, string>;
  start(): Promise<void>;
  stop(): Promise<void>;
  running(): boolean;
}

async function answers(endpoint: string): Promise<boolean> {
  try {
    await fetch(endpoint, { signal: AbortSignal.timeout(1_000) });
    return true;
  } catch {
    return false;
  }
}

export async function s3Server(options: { root: string; log?: (message: string) => void }): Promise<S3Server> {
  const binary = await locateS3Server({ log: options.log ?? ((message) => console.log(message)) });
  const port = await pickPort();
  const endpoint = `http://127.0.0.1:${port}`;
  const accessKeyId = 'albumflow-test';
  const secretAccessKey = 'albumflow-test-secret';
  fs.mkdirSync(options.root, { recursive: true });
  let child: ChildProcess | undefined;
  let output = '';

  const server: S3Server = {
    endpoint,
    accessKeyId,
    secretAccessKey,
    root: options.root,
    createBucket(name) {
      fs.mkdirSync(path.join(options.root, name), { recursive: true });
      return name;
    },
    env: () => ({
      AWS_ENDPOINT_URL_S3: endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: accessKeyId,
      AWS_SECRET_ACCESS_KEY: secretAccessKey,
    }),
    running: () => child !== undefined,
    async start() {
      if (child) return;
      output = '';
      const started = spawn(binary, ['--port', `127.0.0.1:${port}`, '--quiet', 'posix', options.root], {
        env: { PATH: process.env.PATH ?? '', ROOT_ACCESS_KEY: accessKeyId, ROOT_SECRET_KEY: secretAccessKey },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const collect = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
      started.stdout.on('data', collect);
      started.stderr.on('data', collect);
      child = started;
      started.once('exit', () => {
        if (child === started) child = undefined;
      });
      for (const deadline = Date.now() + 15_000; Date.now() < deadline;) {
        if (await answers(endpoint)) return;
        if (child !== started) throw new Error(`the S3 server exited at start:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`the S3 server did not answer on ${endpoint} within 15 s:\n${output}`);
    },
    async stop() {
      const running = child;
      if (!running) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      const timer = setTimeout(() => running.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
      child = undefined;
    },
  };
  return server;
}
