import type fc from 'fast-check';
import { describePluginFuzz, fuzzPlugin, type PluginFuzzReport } from '../testing/fuzz-plugin.ts';
import { describeKeyLaws } from '../testing/state-laws.ts';
import { runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { EXIT } from './exit.ts';
import { loadAppPlugin, loadPluginModule } from './plugin-module.ts';

export const FUZZ_USAGE = `usage: awaken fuzz --plugin FILE [--runs N] [--seed S] [--path P] [--json]
       awaken fuzz --app FILE --plugin NAME [--runs N] [--seed S] [--path P] [--json]

Fuzzes a plugin: its hooks over generated phase inputs and states (the same input gives the same
commands, whatever order their promises settle in; it writes only the keys it registered; its
actions converge within the round bound) and the laws of its state keys (commutative keys merge in
any order, exclusive keys conflict, apply is pure, the codec and persistence round-trip).

FILE is an ES module exporting the plugin (default export or \`plugin\`; a function is called to make
it) and, optionally, \`fuzz\`: { updates: { "<key name>": <fast-check arbitrary of its updates> } }.
With --app FILE, --plugin NAME is the app's plugin of that name, and the app's module may export
\`fuzz\` the same way.
A failure prints the shrunk counterexample and the seed and path that replay it (--seed S --path P).
Exit 0 when every check passes, 1 when one fails, 65 when FILE exports no plugin (or the app is
wrong), 66 when it cannot be read, 64 when the app has no plugin NAME.
`;

export const FUZZ_COMMAND: CommandSpec = {
  command: 'fuzz',
  usage: FUZZ_USAGE,
  options: { plugin: { type: 'string' }, app: { type: 'string' }, runs: { type: 'string' }, seed: { type: 'string' }, path: { type: 'string' }, json: { type: 'boolean' } },
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
      if (failed !== undefined) io.out(`\nreplay the first: awaken fuzz ${app !== undefined ? `--app ${app} ` : ''}--plugin ${file} --seed=${failed.seed} --path '${failed.path ?? ''}'\n`);
    }
    return report.passed ? EXIT.ok : EXIT.failed;
  });
}
