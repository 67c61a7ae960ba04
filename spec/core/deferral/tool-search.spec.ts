import { describe, expect, it } from 'vitest';
import type { ToolDescriptor } from '../../../src/contract/tool.ts';
import { formatFunctions, parseToolQuery, searchTools } from '../../../src/core/deferral/index.ts';

const t = (id: string, description: string): ToolDescriptor => ({ id, name: id, description, parameters: { type: 'object' } });
const registry = [
  t('get_weather', 'Weather forecast for a city'),
  t('get_news', 'News headlines'),
  t('weather_alerts', 'Severe weather alerts'),
  t('debug_dump', 'Dump state'),
];

describe('ToolSearch (book: 了解 ToolSearch 的工作原理)', () => {
  it('parses select:, +required and keywords', () => {
    expect(parseToolQuery(' select: a, ,b ')).toEqual({ kind: 'select', ids: ['a', 'b'] });
    expect(parseToolQuery('+weather city now')).toEqual({ kind: 'required', required: 'weather', rest: ['city', 'now'] });
    expect(parseToolQuery('+')).toEqual({ kind: 'keywords', keywords: ['+'] });
    expect(parseToolQuery('weather  forecast')).toEqual({ kind: 'keywords', keywords: ['weather', 'forecast'] });
  });

  it('ranks by keyword hits, ties in registry order, at most max_results', () => {
    expect(searchTools(registry, parseToolQuery('weather forecast'), 5).map((x) => x.id)).toEqual(['get_weather', 'weather_alerts']);
    expect(searchTools(registry, parseToolQuery('WEATHER'), 1).map((x) => x.id)).toEqual(['get_weather']);
    expect(searchTools(registry, parseToolQuery('+alerts weather'), 5).map((x) => x.id)).toEqual(['weather_alerts']);
    expect(searchTools(registry, parseToolQuery('select:debug_dump,nope,get_news,debug_dump'), 5).map((x) => x.id)).toEqual(['debug_dump', 'get_news']);
    expect(searchTools(registry, parseToolQuery('select:debug_dump,get_news'), 1).map((x) => x.id)).toEqual(['debug_dump']);
    expect(searchTools(registry, parseToolQuery('zzz'), 5)).toEqual([]);
  });

  it('formats a <functions> block', () => {
    expect(formatFunctions([t('a', 'says "hi"')])).toBe(
      '<functions>\n<function>{"description": "says \\"hi\\"", "name": "a", "parameters": {"type":"object"}}</function>\n</functions>',
    );
    expect(formatFunctions([])).toBe('No matching tools found in the deferred tool registry.');
  });
});
