import type { JsonValue } from '../../contract/json.ts';
import type { ToolDescriptor } from '../../contract/tool.ts';

export type ToolQuery =
  | { readonly kind: 'select'; readonly ids: readonly string[] }
  | { readonly kind: 'required'; readonly required: string; readonly rest: readonly string[] }
  | { readonly kind: 'keywords'; readonly keywords: readonly string[] };

/**
 * `select:a,b` picks by id; `+word rest…` requires `word` and ranks by the rest; anything else ranks by
 * keywords (core-spec §6.6).
 */
export function parseToolQuery(query: string): ToolQuery {
  const q = query.trim();
  if (q.startsWith('select:')) {
    return {
      kind: 'select',
      ids: q
        .slice('select:'.length)
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    };
  }
  if (q.startsWith('+')) {
    const words = q
      .slice(1)
      .split(/\s+/)
      .filter((w) => w !== '');
    if (words.length > 0) return { kind: 'required', required: words[0] as string, rest: words.slice(1) };
  }
  return { kind: 'keywords', keywords: q.split(/\s+/).filter((w) => w !== '') };
}

/**
 * The best matches among `registry` (the deferred tools), at most `maxResults`. Keywords score by how
 * many occur in `"id name description"` (case-insensitive); ties keep registry order, so results are
 * deterministic (0.6 breaks ties by hash order ⟂).
 */
export function searchTools(registry: readonly ToolDescriptor[], query: ToolQuery, maxResults: number): ToolDescriptor[] {
  if (query.kind === 'select') {
    const byId = new Map(registry.map((t) => [t.id, t] as const));
    const out: ToolDescriptor[] = [];
    for (const id of query.ids) {
      const t = byId.get(id);
      if (t !== undefined && !out.includes(t)) out.push(t);
      if (out.length >= maxResults) break;
    }
    return out;
  }
  const keywords = (query.kind === 'required' ? [query.required, ...query.rest] : query.keywords).map((k) => k.toLowerCase());
  const required = query.kind === 'required' ? query.required.toLowerCase() : undefined;
  const scored: { tool: ToolDescriptor; score: number; order: number }[] = [];
  registry.forEach((tool, order) => {
    const hay = `${tool.id} ${tool.name} ${tool.description}`.toLowerCase();
    if (required !== undefined && !hay.includes(required)) return;
    let score = 0;
    for (const k of keywords) if (hay.includes(k)) score++;
    if (required === undefined && score === 0) return;
    scored.push({ tool, score, order });
  });
  scored.sort((a, b) => b.score - a.score || a.order - b.order);
  return scored.slice(0, maxResults).map((s) => s.tool);
}

/** The `<functions>` block the model reads: one `<function>{description, name, parameters}</function>` per tool. */
export function formatFunctions(tools: readonly ToolDescriptor[]): string {
  if (tools.length === 0) return 'No matching tools found in the deferred tool registry.';
  const lines = tools.map(
    (t) =>
      `<function>{"description": ${JSON.stringify(t.description)}, "name": ${JSON.stringify(t.name)}, "parameters": ${JSON.stringify(t.parameters as JsonValue)}}</function>`,
  );
  return `<functions>\n${lines.join('\n')}\n</functions>`;
}
