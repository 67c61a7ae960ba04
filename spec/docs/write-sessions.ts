import { readFileSync, writeFileSync } from 'node:fs';
import { runSessions } from './sessions.ts';

/**
 * Writes what each command of a page's console sessions prints now into the page (the commands and
 * the prose stay): `node --import tsx spec/docs/write-sessions.ts docs/recipes.md`, after a change
 * that alters what a command prints. Review the diff: the spec compares the page with a fresh run.
 */
const file = process.argv[2];
if (file === undefined) throw new Error('usage: write-sessions.ts PAGE.md');
const md = readFileSync(file, 'utf8');
const printed = new Map((await runSessions(md)).map((o) => [o.command, o.raw.replace(/\n+$/, '')]));
const lines = md.split('\n');
const out: string[] = [];
for (let i = 0; i < lines.length; i++) {
  out.push(lines[i] as string);
  if (lines[i] !== '```console') continue;
  const body: string[] = [];
  for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] as string);
  for (let j = 0; j < body.length; j++) {
    const typed = [body[j] as string];
    let command = (body[j] as string).slice(2);
    while (command.endsWith('\\') && j + 1 < body.length) {
      typed.push(body[++j] as string);
      command = `${command.slice(0, -1)}${(body[j] as string).trim()}`;
    }
    while (j + 1 < body.length && !(body[j + 1] as string).startsWith('$ ')) j++;
    const text = printed.get(command.trim());
    if (text === undefined) throw new Error(`no output for: ${command}`);
    out.push(...typed, ...(text === '' ? [] : [text]));
  }
  out.push('```');
}
// A server's block shows where Ctrl-C was pressed: before its shutdown lines.
writeFileSync(file, out.join('\n').replace(/\n(\d\d:\d\d:\d\d\.\d{3} INFO {2}shutting down:)/g, '\n^C\n$1'));
