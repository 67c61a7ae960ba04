import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/** The README's client snippets are the code the browser and client specs run: each line is in its source. */
const repo = resolve(import.meta.dirname, '..');
const readme = readFileSync(join(repo, 'README.md'), 'utf8');

/** Code blocks whose first line is a comment naming a source file: `// … : path/to/file`. */
const snippets = [...readme.matchAll(/```tsx?\n\/\/ [^\n]*?: ((?:browser|spec)\/\S+)\n([\s\S]*?)```/g)].map((m) => ({ file: m[1] as string, body: m[2] as string }));

describe('README client snippets', () => {
  it('there are the AI SDK and the AG-UI ones', () => {
    expect(snippets.map((s) => s.file).sort()).toEqual(['browser/src/chat.tsx', 'spec/clients/ag-ui.spec.ts']);
  });

  it.each(snippets)('every line of the snippet from $file is in that file (the server URL aside)', ({ file, body }) => {
    const source = readFileSync(join(repo, file), 'utf8');
    // The page and the spec take the server from elsewhere; the README shows the default one.
    const forms = (line: string): string[] => ['`${API}$1`', '`${server.url}$1`'].map((url) => line.trim().replace(/'http:\/\/127\.0\.0\.1:3000(\/[^']*)'/, url));
    for (const line of body.split('\n').filter((l) => l.trim() !== '')) expect(forms(line).some((f) => source.includes(f)), line).toBe(true);
  });
});
