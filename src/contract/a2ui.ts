import { z } from 'zod';
import { JsonValueSchema, type JsonValue } from './json.ts';
import { err, ok, type Result } from './result.ts';
import { issuesOf, type WireIssue } from './wire.ts';

/**
 * What A2UI v0.9 surfaces look like on the wire, shared by the plugin that draws them and the
 * protocols that carry them: the activity one render call reports, its content's key, and the user
 * message a click in a surface becomes.
 */

/** The activity of one `render_a2ui` call under A2UI v0.9: `{a2ui_operations: [...]}`. */
export const A2UI_SURFACE_ACTIVITY = 'a2ui-surface';
/** The content key of an `a2ui-surface` activity, as `@ag-ui/a2ui-middleware` and CopilotKit's renderer read it. */
export const A2UI_OPERATIONS_KEY = 'a2ui_operations';

/**
 * The AG-UI message id of a call's surface: the one `@ag-ui/a2ui-middleware` gives it, so that a
 * client that also runs the middleware sees one message per call, not two.
 */
export const a2uiSurfaceMessageId = (toolCallId: string): string => `a2ui-surface-${toolCallId}`;

/** A click in a surface, as a renderer reports it (`forwardedProps.a2uiAction.userAction`). */
export type A2uiUserAction = { readonly [key: string]: JsonValue };

/**
 * How much of a click's `context` (the values the surface bound to its action) the user message may
 * carry, as JSON text: a form's fields fit many times over, a body stuffed to the request limit does not.
 */
export const A2UI_CONTEXT_MAX_CHARS = 16_384;

/** The longest name, surface id or component id a click may carry (a surface's ids are held to it too). */
export const A2UI_ID_MAX_CHARS = 200;

/**
 * What a renderer sends: the fields the user message is worded from, typed and bounded, and whatever
 * else it adds (`timestamp`, say), unread. Each field may be missing, as the middleware's wording
 * has a stand-in for it.
 */
const A2uiUserActionSchema = z.looseObject({
  name: z.string().max(A2UI_ID_MAX_CHARS).optional(),
  surfaceId: z.string().max(A2UI_ID_MAX_CHARS).optional(),
  sourceComponentId: z.string().max(A2UI_ID_MAX_CHARS).optional(),
  context: JsonValueSchema.optional().superRefine((value, ctx) => {
    if (value !== undefined && JSON.stringify(value).length > A2UI_CONTEXT_MAX_CHARS)
      ctx.addIssue({ code: 'custom', message: `at most ${A2UI_CONTEXT_MAX_CHARS} characters of JSON` });
  }),
});
const A2uiActionSchema = z.object({ userAction: A2uiUserActionSchema });

/**
 * The action a client's `forwardedProps` carry (`{a2uiAction: {userAction: {…}}}`): none when they
 * name no `a2uiAction`, the issues (paths from `forwardedProps`) when it is malformed.
 */
export function a2uiUserActionOf(forwardedProps: JsonValue | undefined): Result<A2uiUserAction | undefined, WireIssue[]> {
  if (!isObj(forwardedProps) || forwardedProps['a2uiAction'] === undefined) return ok(undefined);
  const parsed = A2uiActionSchema.safeParse(forwardedProps['a2uiAction']);
  if (!parsed.success)
    return err(issuesOf(parsed.error).map((i) => ({ ...i, path: i.path === '' ? 'forwardedProps.a2uiAction' : `forwardedProps.a2uiAction.${i.path}` })));
  return ok(parsed.data.userAction as A2uiUserAction);
}

/**
 * The user message an action becomes, worded as `@ag-ui/a2ui-middleware`'s `formatUserActionResult`
 * words it (0.0.10), so that a model prompted for either reads the same sentence:
 * `User performed action "submit" on surface "order" (component: send). Context: {"name":"Ada"}`.
 */
export function formatA2uiUserAction(action: A2uiUserAction): string {
  const component = action['sourceComponentId'];
  const context = action['context'];
  let text = `User performed action "${String(action['name'] ?? 'unknown_action')}" on surface "${String(action['surfaceId'] ?? 'unknown_surface')}"`;
  if (truthy(component)) text += ` (component: ${String(component)})`;
  return `${text}. Context: ${truthy(context) ? JSON.stringify(context) : '{}'}`;
}

/** JavaScript's truthiness, which the middleware's wording tests the component and the context by. */
const truthy = (v: JsonValue | undefined): boolean => v !== undefined && v !== null && v !== '' && v !== 0 && v !== false;

const isObj = (v: JsonValue | undefined): v is { readonly [k: string]: JsonValue } => typeof v === 'object' && v !== null && !Array.isArray(v);
