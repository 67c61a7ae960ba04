import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conformanceCommand } from '../../src/cli/conformance-command.ts';
import { modelFactoryOf } from '../../src/cli/run-plan.ts';
import { serveCommand } from '../../src/cli/serve-command.ts';
import { main } from '../../src/cli/main.ts';
import type { Io } from '../../src/cli/args.ts';
import { collectStream } from '../../src/runtime/llm.ts';

const runs = resolve(import.meta.dirname, '../../fixtures/runs');

function io(withProgress: boolean): { out: string[]; err: string[]; progress: string[]; io: Io } {
  const out: string[] = [];
  const err: string[] = [];
  const progress: string[] = [];
  return {
    out,
    err,
    progress,
    io: { out: (t) => void out.push(t), err: (t) => void err.push(t), ...(withProgress ? { progress: (l: string) => void progress.push(l) } : {}) },
  };
}

describe('progress: a status line for a terminal, plain lines otherwise', () => {
  it('awaken replay of several files', async () => {
    const files = ['01-plain-answer.jsonl', '02-reasoning.jsonl'].map((f) => join(runs, f));
    const plain = io(false);
    expect(await main(['replay', ...files], plain.io)).toBe(0);
    expect(plain.err.join('')).toBe(`[1/2] identical ${files[0]}\n[2/2] identical ${files[1]}\n`);
    const tty = io(true);
    expect(await main(['replay', ...files], tty.io)).toBe(0);
    expect({ err: tty.err, progress: tty.progress }).toEqual({ err: [], progress: [`[1/2] identical ${files[0]}`, `[2/2] identical ${files[1]}`, ''] });
    expect(tty.out).toEqual(plain.out);
  });

  it('awaken conformance', async () => {
    const plain = io(false);
    expect(await conformanceCommand(['--protocol', 'acp'], plain.io)).toBe(0);
    expect(plain.err).toEqual([expect.stringMatching(/^judged acp: \d+ streams\n$/)]);
    const tty = io(true);
    expect(await conformanceCommand(['--protocol', 'acp'], tty.io)).toBe(0);
    expect(tty.err).toEqual([]);
    expect(tty.progress.at(0)).toMatch(/^judging acp 1\/\d+ /);
    expect(tty.progress.at(-1)).toBe('');
  });
});

describe('inputs', () => {
  it('a file model is read once: every executor after that runs the parsed file from its start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-model-'));
    const file = join(dir, 'm.yaml');
    writeFileSync(file, '- text: first\n- text: second\n');
    const fresh = modelFactoryOf(`scripted:${file}`);
    rmSync(file);
    const request = { model: 'm', messages: [], tools: [] };
    for (let i = 0; i < 2; i++) {
      const llm = fresh();
      expect((await collectStream(llm.stream(request))).content).toEqual([{ type: 'text', text: 'first' }]);
      expect((await collectStream(llm.stream(request))).content).toEqual([{ type: 'text', text: 'second' }]);
    }
  });

  it('a store that does not answer: one line, exit 69, its URL password hidden', async () => {
    const err = io(false);
    const code = await serveCommand(['--store', 'postgres://app:hunter2secret@127.0.0.1:1/awaken'], err.io, '0.0.0', {});
    expect(code).toBe(69);
    expect(err.err.join('')).toMatch(/^awaken serve: the store postgres:\/\/app:\[redacted\]@127\.0\.0\.1:1\/awaken does not answer: [^\n]+\n$/);
    expect(err.err.join('')).not.toContain('hunter2secret');
  });
});
