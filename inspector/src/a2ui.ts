import { A2UI_OPERATIONS_KEY, formatA2uiUserAction, type A2uiUserAction } from '../../src/contract/a2ui.ts';
import { el } from './dom.ts';

/**
 * An A2UI v0.9 surface in the chat (an `a2ui-surface` activity): drawn by `@a2ui/lit`'s v0.9
 * renderer with the basic catalog (./a2ui-surface.ts, loaded the first time a surface comes, so a
 * studio that never shows one never loads it), its click worded as the AG-UI route words
 * `forwardedProps.a2uiAction` — the chat sends that text as the user's next message.
 */

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The operations of a call's surface: its last snapshot's (a snapshot replaces what came before; no delta is sent). */
export function operationsOf(items: readonly unknown[]): unknown[] | undefined {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    const content = isObject(item) ? item['content'] : undefined;
    const ops = isObject(content) ? content[A2UI_OPERATIONS_KEY] : undefined;
    if (Array.isArray(ops)) return ops;
  }
  return undefined;
}

/** The ids of the surfaces the operations draw, in order (each starts with its `createSurface`). */
export function surfaceIdsOf(operations: readonly unknown[]): string[] {
  return operations.flatMap((op) => {
    const create = isObject(op) ? op['createSurface'] : undefined;
    return isObject(create) && typeof create['surfaceId'] === 'string' ? [create['surfaceId']] : [];
  });
}

/**
 * The drawn surfaces of one activity: a node filled once the renderer has loaded. A click (a
 * Button's action) is handed to `onAction` as the message it becomes; a surface the renderer
 * refuses (a catalog it does not know, a component it cannot build) says why, and its JSON stays
 * beside it.
 */
export function drawSurfaces(operations: readonly unknown[], onAction: (text: string) => void): HTMLElement {
  const host = el('div', { class: 'chat-a2ui-drawn' });
  const waiting = el('p', { class: 'note' }, 'Drawing the surface…');
  host.append(waiting);
  import('./a2ui-surface.ts')
    .then(({ renderSurfaces }) => {
      waiting.remove();
      renderSurfaces(host, operations, (action) => onAction(formatA2uiUserAction(action as A2uiUserAction)));
    })
    .catch((e: unknown) => {
      waiting.remove();
      host.append(el('p', { class: 'chat-bad' }, `Not drawn: ${e instanceof Error ? e.message : String(e)}`));
    });
  return host;
}
