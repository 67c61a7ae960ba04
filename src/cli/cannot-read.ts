import { whyUnreadable } from '../contract/unreadable.ts';
import { CliFailure } from './args.ts';
import { EXIT } from './exit.ts';

/**
 * A file or folder a command could not read: one line saying why, exit 66. Not in `args.ts`, which
 * `awaken --version` loads: start-up loads nothing a command does not need (docs/cli.md → Start-up).
 */
export const cannotRead = (path: string, e: unknown, what?: 'file' | 'folder'): CliFailure =>
  new CliFailure(`cannot read ${path}: ${whyUnreadable(e, what)}`, EXIT.noInput);
