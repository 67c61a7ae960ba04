import type { PluginRegistrar } from '../core/phase/plugin.ts';

/**
 * The registrar a plugin is given, with some of its methods replaced: each replacement gets the real
 * registrar; the other methods pass through, and a method that returns the registrar (to chain)
 * returns the intercepting one, so that a chained call is intercepted too.
 */
export function interceptRegistrar(
  target: PluginRegistrar,
  replace: { readonly [K in keyof PluginRegistrar]?: (real: PluginRegistrar, ...args: never[]) => unknown },
): PluginRegistrar {
  const proxy: PluginRegistrar = new Proxy(target, {
    get(real, prop) {
      const own = (replace as Record<PropertyKey, ((r: PluginRegistrar, ...a: unknown[]) => unknown) | undefined>)[prop];
      if (own !== undefined) return (...args: unknown[]) => (own(real, ...args), proxy);
      const v: unknown = Reflect.get(real, prop, real);
      return typeof v === 'function'
        ? (...args: unknown[]) => {
            const out: unknown = (v as (...a: unknown[]) => unknown).apply(real, args);
            return out === real ? proxy : out;
          }
        : v;
    },
  });
  return proxy;
}
