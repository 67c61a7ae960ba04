/**
 * A page's ```http blocks as exchanges a spec sends and compares whole: `> ` lines the request
 * (method and path, headers, a JSON body), `< ` lines the answer (status, headers, body).
 */

/** The page's section under `heading`, up to the next `## `. */
export function sectionOf(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) return '';
  const end = markdown.indexOf('\n## ', start + heading.length + 2);
  return markdown.slice(start, end < 0 ? undefined : end);
}

export interface Exchange {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly status: string;
  readonly answerHeaders: Readonly<Record<string, string>>;
  readonly answer: string;
}

/** The exchanges of the section's ```http blocks, in order. */
export function exchangesOf(section: string): Exchange[] {
  return [...section.matchAll(/^```http\n([\s\S]*?)^```$/gm)].map((m) => {
    const lines = (m[1] as string).trimEnd().split('\n');
    const sent = lines.filter((l) => l.startsWith('> ')).map((l) => l.slice(2));
    const got = lines.filter((l) => l.startsWith('< ')).map((l) => l.slice(2));
    const [request = '', ...requestRest] = sent;
    const [status = '', ...answerRest] = got;
    const [method = '', path = ''] = request.split(' ');
    const headerOf = (rows: readonly string[]) =>
      Object.fromEntries(rows.filter((l) => /^[\w-]+: /.test(l)).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 2)]));
    const body = requestRest.find((l) => l.startsWith('{'));
    return {
      method,
      path,
      headers: headerOf(requestRest),
      ...(body !== undefined ? { body } : {}),
      status,
      answerHeaders: headerOf(answerRest),
      answer: answerRest.find((l) => l.startsWith('{')) ?? '',
    };
  });
}
