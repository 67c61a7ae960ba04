import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { appOption } from './app-option.ts';
import { serve, SERVE_COMMAND, servePlanOf } from './serve-command.ts';

export const DEV_USAGE = `usage: awaken dev --app FILE [awaken serve options]

Serves your app as \`awaken serve --app FILE\` does, and loads it again whenever a source file in its
folder changes (node_modules and dot folders aside): new runs use the new code, runs in flight
finish on the code they started with, and a run waiting for a decision resumes on the code that is
current when its decision comes. A version that does not load keeps the last good one serving and
says why (file and line, or field). Runs are recorded (--record) into a temporary folder unless
--record names one, so the inspector shows every run's timeline and the app version that ran it.
`;

export const DEV_COMMAND: CommandSpec = { ...SERVE_COMMAND, command: 'dev', usage: DEV_USAGE };

/** `awaken dev --app FILE`: `awaken serve --app FILE` with the app loaded again on every change. */
export function devCommand(argv: readonly string[], io: Io, version: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return runCli(DEV_COMMAND, argv, io, async (args) => {
    const appFile = stringOf(args, 'app');
    if (appFile === undefined) throw new UsageError('--app FILE is required (the module of your agents: docs/your-own-agent.md)');
    const app = await appOption(appFile);
    const plan = servePlanOf(args, env, app);
    return serve(plan.record === undefined ? { ...plan, record: mkdtempSync(join(tmpdir(), 'awaken-dev-')) } : plan, io, version, env, { watch: true });
  });
}
