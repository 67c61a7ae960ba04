/**
 * Why a path could not be read, in the words a user acts on: "no such file" rather than `ENOENT`
 * or Node's `ENOENT: no such file or directory, open '…'` (which names the path a second time).
 * Every "cannot read PATH: …" line of the CLI and the replay tools says it this way.
 */
export function whyUnreadable(e: unknown, what: 'file' | 'folder' = 'file'): string {
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  switch (code) {
    // A path through a file (`notes.txt/run.jsonl`, ENOTDIR) names nothing either.
    case 'ENOENT':
    case 'ENOTDIR':
      return `no such ${what}`;
    case 'EISDIR':
      return 'a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    default:
      return e instanceof Error ? e.message : String(e);
  }
}
