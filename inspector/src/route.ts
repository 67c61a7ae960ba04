/**
 * Where the studio is: a URL per view, thread, run and step, kept in the address's fragment so a
 * reload, a bookmark or a link shared with a colleague opens the same place (the fragment never
 * reaches the server, and the page's files are the same for every route).
 *
 * `#/chat`, `#/chat/<thread>`, `#/threads`, `#/threads/<thread>`, `#/threads/<thread>/runs/<run>`,
 * `#/threads/<thread>/runs/<run>/steps/<n>`, `#/replay`; ids percent-encoded (a thread id may hold
 * `/`, `:` or `#`). Anything else is the thread list.
 */
export type Route =
  | { readonly view: 'chat'; readonly thread?: string }
  | { readonly view: 'runs'; readonly thread?: string; readonly run?: string; readonly step?: number }
  | { readonly view: 'replay' };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/');
  if (parts.at(-1) === '') parts.pop();
  let decoded: string[];
  try {
    decoded = parts.map((p) => decodeURIComponent(p));
  } catch {
    return { view: 'runs' };
  }
  if (decoded.some((p) => p === '')) return { view: 'runs' };
  const [head, thread, runsWord, run, stepsWord, step, ...rest] = decoded;
  if (rest.length > 0) return { view: 'runs' };
  if (head === 'chat' && runsWord === undefined) return thread !== undefined ? { view: 'chat', thread } : { view: 'chat' };
  if (head === 'replay' && thread === undefined) return { view: 'replay' };
  if (head !== 'threads' || thread === undefined) return { view: 'runs' };
  if (runsWord !== 'runs' || run === undefined) return runsWord === undefined ? { view: 'runs', thread } : { view: 'runs' };
  if (stepsWord === undefined) return { view: 'runs', thread, run };
  return stepsWord === 'steps' && step !== undefined && /^\d{1,9}$/.test(step)
    ? { view: 'runs', thread, run, step: Number(step) }
    : { view: 'runs', thread, run };
}

const enc = encodeURIComponent;

export function hrefOf(route: Route): string {
  switch (route.view) {
    case 'chat':
      return route.thread !== undefined ? `#/chat/${enc(route.thread)}` : '#/chat';
    case 'replay':
      return '#/replay';
    case 'runs': {
      if (route.thread === undefined) return '#/threads';
      const thread = `#/threads/${enc(route.thread)}`;
      if (route.run === undefined) return thread;
      const run = `${thread}/runs/${enc(route.run)}`;
      return route.step !== undefined ? `${run}/steps/${route.step}` : run;
    }
    default:
      return exhaustive(route);
  }
}

export function exhaustive(x: never): never {
  throw new Error(`unexpected value ${JSON.stringify(x)}`);
}
