import { AppLoadError, loadApp, type LoadedApp } from '../app/load.ts';
import { appProblem, type ConfigIds } from '../app/compose.ts';
import { CliFailure } from './args.ts';
import { EXIT } from './exit.ts';

/** `--app FILE` of any command: the app loaded, or a one-line failure (66 when the file is missing, 65 when it is wrong). */
export async function appOption(file: string): Promise<LoadedApp> {
  try {
    return await loadApp(file);
  } catch (e) {
    if (e instanceof AppLoadError) throw new CliFailure(e.message, e.kind === 'missing' ? EXIT.noInput : EXIT.data);
    throw e;
  }
}

/** The app checked against the config beside it (ids both define, what its agents name): a one-line failure, exit 65. */
export function checkApp(loaded: LoadedApp, config?: ConfigIds, extraPlugins: readonly string[] = []): void {
  const problem = appProblem(loaded, config, extraPlugins);
  if (problem !== undefined) throw new CliFailure(problem, EXIT.data);
}
