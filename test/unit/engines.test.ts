import fs from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';

const read = <T>(file: string): T => JSON.parse(fs.readFileSync(path.join(projectRoot, file), 'utf8')) as T;

describe('the Docker image', () => {
  it('carries every file albumflow reads from its project root at run time', () => {
    const dockerfile = fs.readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8');
    const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    for (const dir of ['migrations', 'src/ui/templates', 'src/ui/assets']) {
      expect(fs.existsSync(path.join(projectRoot, dir))).toBe(true);
      expect(finalStage).toContain(`COPY ${dir} ${dir}`);
    }
  });
});

describe('the Node.js versions albumflow declares', () => {
  const declared = read<{ engines: { node: string } }>('package.json').engines.node;
  const oldest = semver.minVersion(declared)!.version;

  it('are ones every installed dependency declares it runs on', () => {
    const lock = read<{ packages: Record<string, { engines?: { node?: string } | string[] }> }>('package-lock.json');
    const refusing = Object.entries(lock.packages)
      .flatMap(([name, pkg]) => {
        const node = Array.isArray(pkg.engines) ? undefined : pkg.engines?.node;
        return name && node && !semver.satisfies(oldest, node) ? [`${name.replace(/^.*node_modules\//, '')} wants node ${node}`] : [];
      })
      .sort();
    expect(refusing).toEqual([]);
  });

  it('are the ones the Docker image runs', () => {
    const image = /^FROM node:(\d+)[-\w.]* AS build$/m.exec(fs.readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8'))?.[1];
    expect(image).toBeDefined();
    expect(semver.satisfies(`${image}.0.0`, declared)).toBe(true);
    expect(fs.readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8').match(/^FROM node:(\d+)/gm)).toEqual([`FROM node:${image}`, `FROM node:${image}`]);
  });
});
