import fs from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/common/paths.js';

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

/** Every package installed under node_modules (nested ones too) that declares the Node.js versions it runs on. */
function installedEngines(): Array<{ name: string; node: string }> {
  const found: Array<{ name: string; node: string }> = [];
  const walk = (modules: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(modules, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
      const dir = path.join(modules, entry.name);
      if (entry.name.startsWith('@')) {
        walk(dir);
        continue;
      }
      let manifest: { name?: string; version?: string; engines?: { node?: unknown } | string[] };
      try {
        manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as typeof manifest;
      } catch {
        continue;
      }
      const node = Array.isArray(manifest.engines) ? undefined : manifest.engines?.node;
      if (typeof node === 'string') found.push({ name: `${path.relative(projectRoot, dir)} (${manifest.name}@${manifest.version})`, node });
      walk(path.join(dir, 'node_modules'));
    }
  };
  walk(path.join(projectRoot, 'node_modules'));
  return found;
}

describe('the Node.js versions albumflow declares', () => {
  const manifest = read<{ engines: { node: string }; devDependencies: Record<string, string> }>('package.json');
  const declared = manifest.engines.node;
  /** The lowest version of each range of `declared`: 20.19.0 of `^20.19.0 || ^22.13.0 || >=24`. */
  const floors = new semver.Range(declared).set.map((comparators) => semver.minVersion(comparators.map(String).join(' '))!);

  it('are ones every installed package, the dev dependencies included, declares it runs on', () => {
    const installed = installedEngines();
    expect(installed.length).toBeGreaterThan(0);
    const refusing = installed
      .filter(({ node }) => !semver.subset(declared, node))
      .map(({ name, node }) => `${name} wants node ${node}`)
      .sort();
    expect(refusing).toEqual([]);
  });

  it('are the ones the Docker image runs', () => {
    const dockerfile = fs.readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8');
    const image = /^FROM node:(\d+)[-\w.]* AS build$/m.exec(dockerfile)?.[1];
    expect(image).toBeDefined();
    // The tag names a major: the image is its newest release.
    expect(semver.satisfies(`${image}.99.0`, declared)).toBe(true);
    expect(dockerfile.match(/^FROM node:(\d+)/gm)).toEqual([`FROM node:${image}`, `FROM node:${image}`]);
  });

  it('are the ones the README names, and the type definitions are those of the oldest', () => {
    const readme = fs.readFileSync(path.join(projectRoot, 'README.md'), 'utf8');
    const sentence = /^You need Node\.js .*$/m.exec(readme)?.[0];
    expect(sentence).toBeDefined();
    for (const floor of floors)
      expect(sentence).toContain(floor.patch === 0 && floor.minor === 0 ? `${floor.major}` : `${floor.major}.${floor.minor}`);
    const oldest = floors.reduce((a, b) => (semver.lt(a, b) ? a : b));
    expect(semver.minVersion(manifest.devDependencies['@types/node']!)!.major).toBe(oldest.major);
  });
});
