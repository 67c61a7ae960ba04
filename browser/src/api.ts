/**
 * The awaken server this page talks to: `?api=http://127.0.0.1:3000` (default). The page is served
 * from its own origin, so every call is cross-origin: the server's CORS must allow this origin.
 */
export const API = new URLSearchParams(location.search).get('api') ?? 'http://127.0.0.1:3000';
export const THREAD = new URLSearchParams(location.search).get('thread') ?? `browser-${Date.now()}`;
