import { embeddedSuite, inHono } from '../support/embedded.ts';

/**
 * Awaken's Fetch handler in a real Hono application on a real socket (docs/embedding.md → Hono):
 * every path under the mount given to `awaken.fetch` as sent, two agents, two API tokens, the real
 * clients through it (spec/support/embedded.ts).
 */
embeddedSuite('a Hono app', () => inHono());
