import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { defineApp, scriptedProvider } from 'awaken-ts';
import type { RunRecovery } from '../../src/contract/agent-spec.ts';
import { Messages } from '../../src/contract/message.ts';
import { ServeConfigSchema } from '../../src/cli/serve-config.ts';
import { createAwaken } from '../../src/server/embed.ts';
import { silentLogger } from '../../src/server/log.ts';
import { DEFAULT_RECOVERY, recoverRuns, resumeLeftRunning, runsLeftRunning } from '../../src/server/recovery.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { stored } from '../support/registry-fakes.ts';
import { repo } from '../support/serve-process.ts';

/** What a start-up does with the runs a previous process left unfinished (docs/server.md → Runs a process left running). */

const STOPPED = 'interrupted: the server stopped while the run was running';

async function storeLeftBehind(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await stored(store, 'top', 't1', 'running');
  await stored(store, 'child', 't2', 'running', [], 'top');
  await stored(store, 'parked', 't3', 'waiting');
  await stored(store, 'fresh', 't4', 'created');
  return store;
}

/** A run of `agentId` its process left running, at the start of its first step. */
const leftRunning = (store: MemoryStore, runId: string, agentId: string, agentDigest?: string): Promise<void> =>
  store.checkpoint({
    ...(agentDigest !== undefined ? { agentDigest } : {}),
    threadId: `thread-of-${runId}`,
    runId,
    agentId,
    messages: [Messages.user('go')],
    status: 'running',
    steps: 0,
    threadState: { revision: 1, extensions: {} },
    runState: { revision: 1, extensions: { '__runtime.run_lifecycle': { run_id: runId, status: 'running', updated_at: 0, step_count: 0 } } },
    updatedAt: 0,
  });

const agents = (entries: Record<string, RunRecovery | undefined>): ReadonlyMap<string, { readonly recovery?: RunRecovery }> =>
  new Map(Object.entries(entries).map(([id, recovery]) => [id, recovery !== undefined ? { recovery } : {}]));

const termination = async (store: MemoryStore, runId: string) => {
  const run = await store.getRun(runId);
  return run?.status === 'done' ? run.termination : run?.status;
};

describe('start-up recovery', () => {
  it('a server resumes by default', () => {
    expect(DEFAULT_RECOVERY).toBe('resume');
  });

  it('with interrupt, every created or running run ends interrupted; a waiting one stays waiting', async () => {
    const store = await storeLeftBehind();
    expect((await recoverRuns(store, 5, { recovery: 'interrupt' })).sort()).toEqual(['child', 'fresh', 'top']);
    expect((await store.getRun('top'))?.termination).toEqual({ type: 'error', value: STOPPED });
    expect((await store.getRun('parked'))?.status).toBe('waiting');
    expect(await runsLeftRunning(store)).toEqual([]);
  });

  it('with resume, a running run is left running for the registry; a delegate’s sub-run ends interrupted (its parent’s call decides)', async () => {
    const store = await storeLeftBehind();
    expect((await recoverRuns(store, 5, { recovery: 'resume' })).sort()).toEqual(['child', 'fresh']);
    expect(await runsLeftRunning(store)).toEqual(['top']);
    expect(await store.getRun('top')).toMatchObject({ status: 'running' });
    expect(await store.getRun('child')).toMatchObject({ status: 'done', termination: { type: 'error', value: STOPPED } });
  });

  it('an agent’s own recovery wins over the server’s; the server’s is for the agents that say nothing', async () => {
    for (const server of ['resume', 'interrupt'] as const) {
      const store = new MemoryStore();
      await leftRunning(store, 'quiet', 'writer');
      await leftRunning(store, 'careful', 'payments');
      await leftRunning(store, 'eager', 'indexer');
      const ended = await recoverRuns(store, 5, { recovery: server, agents: agents({ writer: undefined, payments: 'interrupt', indexer: 'resume' }) });
      const expected = server === 'resume' ? ['careful'] : ['careful', 'quiet'];
      expect(ended.sort()).toEqual(expected);
      expect((await runsLeftRunning(store)).sort()).toEqual(server === 'resume' ? ['eager', 'quiet'] : ['eager']);
      expect(await termination(store, 'careful')).toEqual({ type: 'error', value: STOPPED });
    }
  });

  it('a run whose agent is no longer served is not taken up: it ends saying so (with interrupt, as any other)', async () => {
    const store = new MemoryStore();
    await leftRunning(store, 'orphan', 'retired');
    expect(await recoverRuns(store, 5, { recovery: 'resume', agents: agents({ writer: undefined }) })).toEqual(['orphan']);
    expect(await termination(store, 'orphan')).toEqual({ type: 'error', value: `${STOPPED}, and its agent 'retired' is no longer served` });
    const other = new MemoryStore();
    await leftRunning(other, 'orphan', 'retired');
    await recoverRuns(other, 5, { recovery: 'interrupt', agents: agents({ writer: undefined }) });
    expect(await termination(other, 'orphan')).toEqual({ type: 'error', value: STOPPED });
  });

  it('a run whose agent changed since it started (its digest differs) is not taken up: it ends saying so', async () => {
    const store = new MemoryStore();
    await leftRunning(store, 'changed', 'writer', 'sha256:before');
    await leftRunning(store, 'same', 'writer', 'sha256:now');
    await leftRunning(store, 'older', 'writer');
    const digest = (agentId: string): string | undefined => (agentId === 'writer' ? 'sha256:now' : undefined);
    expect(await recoverRuns(store, 5, { recovery: 'resume', agents: agents({ writer: undefined }), digest })).toEqual(['changed']);
    expect(await termination(store, 'changed')).toEqual({
      type: 'error',
      value: `${STOPPED}, and its agent 'writer' changed since the run started (its config or its code)`,
    });
    // The same agent, and a run stored before runs kept a digest: taken up.
    expect(await termination(store, 'same')).toBe('running');
    expect(await termination(store, 'older')).toBe('running');
    // A digest names the agent the run started as: after a handoff, that agent is compared (and must still be served).
    const handedOff = new MemoryStore();
    await leftRunning(handedOff, 'kept', 'editor', 'writer@sha256:now');
    await leftRunning(handedOff, 'orphaned', 'editor', 'retired@sha256:now');
    const named = (agentId: string): string | undefined => (agentId === 'writer' ? 'writer@sha256:now' : undefined);
    expect(await recoverRuns(handedOff, 5, { recovery: 'resume', agents: agents({ writer: undefined, editor: undefined }), digest: named })).toEqual([
      'orphaned',
    ]);
    expect(await termination(handedOff, 'orphaned')).toEqual({ type: 'error', value: `${STOPPED}, and its agent 'retired' is no longer served` });
    // Without a digest to compare with, nothing is compared.
    const other = new MemoryStore();
    await leftRunning(other, 'changed', 'writer', 'sha256:before');
    expect(await recoverRuns(other, 5, { recovery: 'resume', agents: agents({ writer: undefined }) })).toEqual([]);
  });

  it('a run whose record names no agent is its runtime’s first agent’s', async () => {
    const store = new MemoryStore();
    await leftRunning(store, 'unnamed', '');
    expect(await recoverRuns(store, 5, { recovery: 'resume', agents: agents({ zeta: undefined, alpha: 'interrupt' }) })).toEqual(['unnamed']);
    expect(await termination(store, 'unnamed')).toEqual({ type: 'error', value: STOPPED });
  });

  it('logs how many it marked, when it marked any', async () => {
    const lines: string[] = [];
    const logger = { ...silentLogger, warn: (m: string) => void lines.push(m) };
    await recoverRuns(await storeLeftBehind(), 5, { recovery: 'resume', logger });
    await recoverRuns(new MemoryStore(), 5, { recovery: 'resume', logger });
    expect(lines).toEqual(['marked 2 run(s) left unfinished by a previous process as interrupted']);
  });

  it('takes each up, logs how many it did, and goes on past one whose store fails', async () => {
    const lines: string[] = [];
    const logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (m: string) => void lines.push(`warn ${m}`),
      error: (m: string) => void lines.push(`error ${m}`),
    };
    const taken: string[] = [];
    const registry = {
      recover: async (runId: string): Promise<boolean> => {
        taken.push(runId);
        if (runId === 'b') throw new Error('the store went away');
        return runId !== 'c';
      },
    };
    await resumeLeftRunning(registry, ['a', 'b', 'c'], logger);
    expect(taken).toEqual(['a', 'b', 'c']);
    expect(lines).toEqual(['error run left running not recovered', 'warn resumed 1 of 3 run(s) a previous process left running']);
    lines.length = 0;
    await resumeLeftRunning(registry, [], logger);
    expect(lines).toEqual([]);
  });
});

describe('a mailbox job whose run is taken up', () => {
  it('is acknowledged: the run is its work going on, and its dead claim does not queue it again; a job whose run was not taken up is left to its lease', async () => {
    const store = new MemoryStore();
    await leftRunning(store, 'taken', 'agent');
    await leftRunning(store, 'refused', 'agent');
    for (const id of ['taken', 'refused'])
      await store.enqueue({ job_id: `job-${id}`, mailbox_id: `thread-of-${id}`, agent_id: 'agent', messages: [Messages.user('go')], origin: 'user' }, 0);
    expect((await store.claim('dead-consumer', 'claim-1', 1_000, 1, 10)).map((j) => j.job_id).sort()).toEqual(['job-refused', 'job-taken']);
    const registry = { recover: async (runId: string): Promise<boolean> => runId === 'taken' };
    await resumeLeftRunning(registry, ['taken', 'refused'], silentLogger, { store, now: 2 });
    expect((await store.loadJob('job-taken'))?.status).toBe('accepted');
    expect((await store.loadJob('job-refused'))?.status).toBe('claimed');
    // Its lease expired, the job not taken up is queued again; the acknowledged one is not.
    expect((await store.reclaimExpired(5_000, 10)).map((j) => j.job_id)).toEqual(['job-refused']);
  });
});

describe('docs/server.md → Runs a process left running, an agent’s own recovery, as written', () => {
  const section = (() => {
    const page = readFileSync(join(repo, 'docs/server.md'), 'utf8');
    const start = page.indexOf('\n## Runs a process left running\n');
    return page.slice(start, page.indexOf('\n## ', start + 5));
  })();
  const blocks = (lang: string): string[] =>
    [...section.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((m) => (m[1] as string).trimEnd());
  /** The config the section shows: its agents, with a model that answers at once. */
  const config = () => ServeConfigSchema.parse(parseYaml(blocks('yaml')[1] ?? 'no config in docs/server.md'));
  const app = () =>
    defineApp({
      agents: config().agents,
      models: { small: { provider: 'offline', model_name: 'offline' } },
      providers: { offline: scriptedProvider([{ text: 'Draft written.' }]) },
    });

  it('a start after a kill with a run of each agent left running logs what it shows: the one ended, the other taken up', async () => {
    const store = new MemoryStore();
    await leftRunning(store, 'draft', 'writer');
    await leftRunning(store, 'charge', 'payments');
    const warned: string[] = [];
    const recovery = config().server.recovery;
    const awaken = await createAwaken({
      app: app(),
      store,
      ...(recovery !== undefined ? { recovery } : {}),
      logger: { ...silentLogger, warn: (m) => void warned.push(m) },
    });
    try {
      expect(warned.join('\n')).toBe(blocks('text')[2]);
      expect(await termination(store, 'charge')).toEqual({ type: 'error', value: STOPPED });
      for (let i = 0; i < 100 && (await store.getRun('draft'))?.status === 'running'; i++) await new Promise((r) => setTimeout(r, 20));
      expect(await termination(store, 'draft')).toEqual({ type: 'natural_end' });
    } finally {
      await awaken.close({ graceMs: 100 });
    }
  });

  it('a run of an agent the config no longer has ends with the reason it shows', async () => {
    const store = new MemoryStore();
    await leftRunning(store, 'orphan', 'retired');
    const awaken = await createAwaken({ app: app(), store, logger: silentLogger });
    try {
      expect(await termination(store, 'orphan')).toEqual({ type: 'error', value: blocks('text')[3] });
    } finally {
      await awaken.close({ graceMs: 100 });
    }
  });

  it('a run of an agent changed since the run started ends with the reason it shows; the same agent takes it up', async () => {
    // What a run records of its agent, from a run the server started.
    const first = new MemoryStore();
    const server = await createAwaken({ app: app(), store: first, logger: silentLogger });
    let digest: string | undefined;
    try {
      const res = await server.fetch(
        new Request('http://local/v1/runs', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ agentId: 'writer', messages: [{ role: 'user', content: 'go' }] }),
        }),
      );
      await res.text();
      digest = (await first.getRun(res.headers.get('x-awaken-run-id') ?? ''))?.agent_digest;
    } finally {
      await server.close({ graceMs: 100 });
    }
    expect(digest).toMatch(/^writer@sha256:[0-9a-f]{16}$/);
    const changed = () => {
      const base = app();
      return defineApp({ ...base, agents: base.agents.map((a) => (a.id === 'writer' ? { ...a, system_prompt: 'Write shorter drafts.' } : a)) });
    };
    for (const [served, expected] of [
      [changed, { type: 'error', value: blocks('text')[4] }],
      [app, { type: 'natural_end' }],
    ] as const) {
      const store = new MemoryStore();
      await leftRunning(store, 'draft', 'writer', digest);
      const awaken = await createAwaken({ app: served(), store, logger: silentLogger });
      try {
        for (let i = 0; i < 100 && (await store.getRun('draft'))?.status === 'running'; i++) await new Promise((r) => setTimeout(r, 20));
        expect(await termination(store, 'draft')).toEqual(expected);
      } finally {
        await awaken.close({ graceMs: 100 });
      }
    }
  });

  it('an agent’s recovery is one of the two: anything else stops the start naming the field', () => {
    const bad = ServeConfigSchema.safeParse({ agents: [{ id: 'payments', model: 'small', recovery: 'retry' }] });
    expect(bad.success ? 'taken' : bad.error.issues.map((i) => [i.path.join('.'), i.code])).toEqual([['agents.0.recovery', 'invalid_value']]);
  });
});
