import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Runs a fake API's command as a person does (`npm run fake-…-api -- --port 0`) until it lists what it serves. */
async function listing(script: string, files: string[] = []): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, '--port', '0', ...files], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  try {
    return await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
        if (output.includes('Ctrl-C stops it')) resolve(output);
      });
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before listing: ${output}`)));
    });
  } finally {
    child.kill('SIGINT');
  }
}

describe('the fake APIs people run on their own', () => {
  it('npm run fake-line-api serves one image per message of the example set, a redelivered event included once', async () => {
    const output = await listing('test/harness/servers/fake-line-api-main.ts');
    expect(output).toContain('It knows one channel and serves 4 images to it:');
    const messages = [...output.matchAll(/^ {2}message (\S+) {2}JPEG/gm)].map((match) => match[1]);
    expect(messages).toHaveLength(4);
    expect(new Set(messages).size).toBe(4);
  });

  it('npm run fake-bot-api serves one photo per file of the example album', async () => {
    const output = await listing('test/harness/servers/fake-bot-api-main.ts');
    expect(output).toContain('It knows one bot, 7000000001, and serves 3 photos to it:');
    const files = [...output.matchAll(/^ {2}(\S+)… {2}\d+×\d+ JPEG/gm)].map((match) => match[1]);
    expect(new Set(files).size).toBe(3);
  });

  it('npm run fake-bot-api serves a live photo’s video and still, and each file of paid media (Bot API 10)', async () => {
    const fixtures = ['live-photo-album', 'paid-media'].map((name) => `test/fixtures/telegram/${name}.json`);
    const output = await listing('test/harness/servers/fake-bot-api-main.ts', fixtures);
    expect(output).toContain('It knows one bot, 7000000001, and serves 5 files to it:');
    const served = [...output.matchAll(/^ {2}\S+… {2}(\d+×\d+) (JPEG|MP4), \d+ bytes {2}\(update (\d+) of/gm)].map((match) =>
      match.slice(1),
    );
    expect(served).toEqual([
      ['1080×1440', 'MP4', '810001001'],
      ['1080×1440', 'JPEG', '810001001'],
      ['1280×960', 'JPEG', '810001002'],
      ['1280×960', 'JPEG', '810001101'],
      ['1920×1080', 'MP4', '810001101'],
    ]);
  });
});
