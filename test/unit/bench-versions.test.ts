import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeBuildInfo, parseModuleInfo, readGoBuildInfo } from '../../bench/go-build-info.js';
import { describeTemporalCli } from '../../bench/versions.js';

// The .go.buildinfo section of the Temporal CLI that `go install github.com/temporalio/cli/cmd/temporal@v1.5.1`
// built (go1.26.8, linux/amd64), as the linker wrote it; `temporal --version` of that binary prints
// `temporal version 0.0.0-DEV (Server 1.29.1, UI 2.42.1)`.
const section = fs.readFileSync(new URL('../fixtures/go-build-info/temporal-cli-v1.5.1.bin', import.meta.url));
const devOutput = 'temporal version 0.0.0-DEV (Server 1.29.1, UI 2.42.1)\n';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-go-build-info-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

function binary(name: string, ...parts: Buffer[]): string {
  const file = path.join(scratch, name);
  fs.writeFileSync(file, Buffer.concat(parts));
  return file;
}

const filler = (length: number) => Buffer.alloc(length, 0x90);

describe("a Go binary's build information", () => {
  it('names the main module, the modules linked in and the build settings, as `go version -m` does', () => {
    const info = decodeBuildInfo(section);
    expect(info?.goVersion).toBe('go1.26.8');
    expect(info?.path).toBe('github.com/temporalio/cli/cmd/temporal');
    expect(info?.main).toEqual({ path: 'github.com/temporalio/cli', version: 'v1.5.1' });
    expect(info?.deps['go.temporal.io/server']).toBe('v1.29.1');
    expect(info?.deps['github.com/temporalio/ui-server/v2']).toBe('v2.42.1');
    expect(Object.keys(info?.deps ?? {})).toHaveLength(159);
    expect(info?.settings).toMatchObject({ GOOS: 'linux', GOARCH: 'amd64', '-trimpath': 'true' });
  });

  it('is found on its 16-byte boundary anywhere in the file, past chunk boundaries and decoys', async () => {
    const decoy = Buffer.concat([section.subarray(0, 16), Buffer.alloc(16)]);
    decoy[15] = 0; // the pointer format Go 1.17 and earlier wrote: not read
    const file = binary(
      'temporal',
      filler(4096 + 3),
      section.subarray(0, 14), // the magic off its boundary
      filler(4096 - 3 - 14 + 64),
      decoy,
      section,
      filler(100),
    );
    const info = await readGoBuildInfo(file, 4096);
    expect(info?.main).toEqual({ path: 'github.com/temporalio/cli', version: 'v1.5.1' });
    expect(info?.deps['go.temporal.io/server']).toBe('v1.29.1');
  });

  it('is null for a file without one', async () => {
    expect(await readGoBuildInfo(binary('plain', filler(10_000)), 4096)).toBeNull();
    expect(await readGoBuildInfo(binary('misaligned', filler(8), section), 4096)).toBeNull();
    await expect(readGoBuildInfo(binary('any', filler(10)), 1000)).rejects.toThrow(/multiple of 16/);
  });

  it("takes a replacement's version for the module it replaces", () => {
    const info = parseModuleInfo(
      'go1.26.8',
      [
        'path\texample.com/tool',
        'mod\texample.com/tool\t(devel)\t',
        'dep\texample.com/lib\tv1.0.0\th1:a=',
        '=>\texample.com/fork\tv1.0.1\th1:b=',
        'build\tvcs.revision=0123456789abcdef0123',
        '',
      ].join('\n'),
    );
    expect(info.main).toEqual({ path: 'example.com/tool', version: '(devel)' });
    expect(info.deps).toEqual({ 'example.com/lib': 'v1.0.1' });
    expect(info.settings['vcs.revision']).toBe('0123456789abcdef0123');
  });
});

describe("the Temporal CLI's version in a run's header", () => {
  it("is the main module's version when the build set none", () => {
    expect(describeTemporalCli(devOutput, decodeBuildInfo(section))).toBe('1.5.1 (Server 1.29.1, UI 2.42.1)');
  });

  it('is what a release build prints', () => {
    expect(describeTemporalCli('temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)\n', null)).toBe('1.5.1 (Server 1.29.1, UI 2.42.1)');
  });

  it('says so when the binary was built from a working copy, or has no build information', () => {
    const devel = parseModuleInfo('go1.26.8', 'mod\tgithub.com/temporalio/cli\t(devel)\t\nbuild\tvcs.revision=0123456789abcdef');
    expect(describeTemporalCli(devOutput, devel)).toBe('built from a working copy at 0123456789ab (Server 1.29.1, UI 2.42.1)');
    expect(describeTemporalCli(devOutput, null)).toBe('0.0.0-DEV (Server 1.29.1, UI 2.42.1)');
  });
});
