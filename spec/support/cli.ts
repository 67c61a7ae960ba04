import { main } from '../../src/cli/main.ts';

/** `awaken ARGV…` in process: its exit code and what it wrote to stdout and stderr. */
export async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}
