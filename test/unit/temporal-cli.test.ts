import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { locateTemporalCli, toolCacheDir } from '../../src/embedded/temporal-cli.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-cli-'));
  dirs.push(dir);
  return dir;
}
function fakeCli(dir: string, name = 'temporal'): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  fs.writeFileSync(file, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  return file;
}

afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('locateTemporalCli', () => {
  it('prefers TEMPORAL_CLI_PATH over PATH and the cache', async () => {
    const explicit = fakeCli(tempDir(), 'my-temporal');
    const onPath = tempDir();
    fakeCli(onPath);
    const cache = tempDir();
    fakeCli(path.join(cache, 'albumflow', 'bin'));
    const cli = await locateTemporalCli({ env: { TEMPORAL_CLI_PATH: explicit, PATH: onPath, XDG_CACHE_HOME: cache }, allowBuild: false });
    expect(cli).toEqual({ kind: 'binary', path: explicit, source: 'TEMPORAL_CLI_PATH' });
  });

  it('fails clearly when TEMPORAL_CLI_PATH is not an executable', async () => {
    await expect(locateTemporalCli({ env: { TEMPORAL_CLI_PATH: '/nonexistent/temporal' } })).rejects.toThrow(
      'TEMPORAL_CLI_PATH=/nonexistent/temporal is not an executable file',
    );
  });

  it('uses `temporal` on PATH before the tool cache', async () => {
    const onPath = tempDir();
    const expected = fakeCli(onPath);
    const cache = tempDir();
    fakeCli(path.join(cache, 'albumflow', 'bin'));
    const cli = await locateTemporalCli({ env: { PATH: `/nonexistent:${onPath}`, XDG_CACHE_HOME: cache }, allowBuild: false });
    expect(cli).toEqual({ kind: 'binary', path: expected, source: 'PATH' });
  });

  it('uses the per-user tool cache next', async () => {
    const cache = tempDir();
    const expected = fakeCli(toolCacheDir({ XDG_CACHE_HOME: cache }));
    const cli = await locateTemporalCli({ env: { PATH: tempDir(), XDG_CACHE_HOME: cache }, allowBuild: false });
    expect(cli).toEqual({ kind: 'binary', path: expected, source: 'cache' });
  });

  it('falls back to the SDK download when nothing is found and building is not allowed', async () => {
    const messages: string[] = [];
    const cli = await locateTemporalCli({
      env: { PATH: tempDir(), XDG_CACHE_HOME: tempDir() },
      allowBuild: false,
      log: (m) => messages.push(m),
    });
    expect(cli).toEqual({ kind: 'sdk-download' });
    expect(messages.join('\n')).toContain('falling back to the Temporal SDK download');
  });
});
