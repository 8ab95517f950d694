import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dynamicConfigFlags, readDynamicConfig } from '../../src/temporal/dynamic-config.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-dynamic-config-'));
let files = 0;
function file(text: string): string {
  const written = path.join(dir, `dynamicconfig-${(files += 1)}.yaml`);
  fs.writeFileSync(written, text);
  return written;
}

describe('the Temporal dynamic configuration file', () => {
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('becomes one dev server flag per setting, its value as JSON', () => {
    const settings = file(
      [
        'system.enableActivityEagerExecution:',
        '  - value: true',
        'limit.maxIDLength:',
        '  - value: 255',
        'frontend.namespaceRPS:',
        '  - value: { a: 1 }',
      ].join('\n'),
    );
    expect(readDynamicConfig(settings)).toEqual({
      'system.enableActivityEagerExecution': true,
      'limit.maxIDLength': 255,
      'frontend.namespaceRPS': { a: 1 },
    });
    expect(dynamicConfigFlags(settings)).toEqual([
      '--dynamic-config-value',
      'system.enableActivityEagerExecution=true',
      '--dynamic-config-value',
      'limit.maxIDLength=255',
      '--dynamic-config-value',
      'frontend.namespaceRPS={"a":1}',
    ]);
  });

  it('refuses what the dev server flags cannot say: constraints, several values, a bare value', () => {
    const constrained = ['history.maxAutoResetPoints:', '  - value: 5', '    constraints: { namespace: demo }'].join('\n');
    const twoValues = ['limit.maxIDLength:', '  - value: 255', '  - value: 300'].join('\n');
    for (const text of [constrained, twoValues, 'limit.maxIDLength: 255']) {
      expect(() => readDynamicConfig(file(text))).toThrow(/must be a list of exactly one `- value: …` without constraints/);
    }
  });

  it('enables eager activity execution in the repository file every server reads', () => {
    expect(readDynamicConfig()).toEqual({ 'system.enableActivityEagerExecution': true });
  });
});
