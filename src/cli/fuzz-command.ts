import type fc from 'fast-check';
import { describePluginFuzz, fuzzPlugin, type PluginFuzzReport } from '../testing/fuzz-plugin.ts';
import { describeKeyLaws } from '../testing/state-laws.ts';
import { runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { EXIT } from './exit.ts';
import { loadAppPlugin, loadPluginModule } from './plugin-module.ts';
import { FUZZ_USAGE } from './usages.ts';

export { FUZZ_USAGE };

export const FUZZ_COMMAND: CommandSpec = {
  command: 'fuzz',
  usage: FUZZ_USAGE,
  options: {
    plugin: { type: 'string' },
    app: { type: 'string' },
    runs: { type: 'string' },
    seed: { type: 'string' },
    path: { type: 'string' },
    json: { type: 'boolean' },
  },
};

const integer = (args: Parameters<typeof stringOf>[0], name: string): number | undefined => {
  const v = stringOf(args, name);
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v)) throw new UsageError(`--${name} must be an integer, not '${v}'`);
  return Number(v);
};

/** `awaken fuzz --plugin FILE` (or `--app FILE --plugin NAME`): a user's plugin through `fuzzPlugin`. */
export async function fuzzCommand(argv: readonly string[], io: Io): Promise<number> {
  return runCli(FUZZ_COMMAND, argv, io, async (args) => {
    const file = stringOf(args, 'plugin');
    const app = stringOf(args, 'app');
    if (file === undefined) throw new UsageError(app === undefined ? '--plugin FILE is required' : "--plugin NAME is required (the app's plugin to fuzz)");
    const runs = integer(args, 'runs');
    if (runs !== undefined && runs < 1) throw new UsageError('--runs must be at least 1');
    const seed = integer(args, 'seed');
    const path = stringOf(args, 'path');
    const { plugin, module: mod } = app === undefined ? await loadPluginModule(file) : await loadAppPlugin(app, file);
    const fuzz = (mod['fuzz'] ?? {}) as { updates?: Record<string, fc.Arbitrary<unknown>> };
    const report: PluginFuzzReport = await fuzzPlugin(plugin, {
      ...(fuzz.updates !== undefined ? { updates: fuzz.updates } : {}),
      ...(runs !== undefined ? { numRuns: runs } : {}),
      ...(seed !== undefined ? { seed } : {}),
      ...(path !== undefined ? { path } : {}),
    });
    if (args.values['json'] === true) io.out(`${JSON.stringify(report, null, 2)}\n`);
    else {
      io.out(describePluginFuzz(report, describeKeyLaws));
      const failed = [...report.failures, ...report.keys.flatMap((k) => k.failures)].find((f) => f.path !== undefined);
      // `--seed=S` reads the same whatever the sign of S, in any option parser.
      if (failed !== undefined)
        io.out(
          `\nreplay the first: awaken fuzz ${app !== undefined ? `--app ${app} ` : ''}--plugin ${file} --seed=${failed.seed} --path '${failed.path ?? ''}'\n`,
        );
    }
    return report.passed ? EXIT.ok : EXIT.failed;
  });
}
