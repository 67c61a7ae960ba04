import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { appOption } from './app-option.ts';
import { serve, SERVE_COMMAND, servePlanOf } from './serve-command.ts';
import { DEV_USAGE } from './usages.ts';

export { DEV_USAGE };

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
