import { renderMarkdown } from '@a2ui/markdown-it';
import { type A2uiSurface, basicCatalog } from '@a2ui/lit/v0_9';
import { Catalog, Context, MessageProcessor, type A2uiClientAction, type A2uiMessage, type SurfaceModel } from '@a2ui/web_core/v0_9';
import { A2uiBasicTextFieldElement, A2uiDateTimeInputElement, A2uiSliderElement } from '@a2ui/web_core/v0_9/basic_catalog';
import { ContextProvider } from '@lit/context';
// Registers <a2ui-surface> (the module defines it as it loads).
import '@a2ui/lit/v0_9';

/**
 * The renderer of ./a2ui.ts, in a chunk of its own: `@a2ui/web_core`'s v0.9 message processor and
 * `@a2ui/lit`'s `<a2ui-surface>` with the basic catalog. Its components style themselves with
 * constructed style sheets, which the page's content security policy allows (no inline style); a
 * Text's markdown is rendered by `@a2ui/markdown-it` (markdown-it, then DOMPurify).
 */

/**
 * The basic catalog's fields whose label the published elements (`@a2ui/web_core` 0.11) draw beside
 * the input without naming it: each is drawn by a subclass that names its inputs by that label
 * (`aria-label`), so a screen reader and a label lookup find them.
 */
const LABELLED: readonly (readonly [name: string, base: CustomElementConstructor, tag: string])[] = [
  ['TextField', A2uiBasicTextFieldElement, 'studio-a2ui-textfield'],
  ['Slider', A2uiSliderElement, 'studio-a2ui-slider'],
  ['DateTimeInput', A2uiDateTimeInputElement, 'studio-a2ui-datetimeinput'],
];
type FieldElement = HTMLElement & { controller?: { props?: { label?: unknown } }; updated?(changed: unknown): void };
for (const [, base, tag] of LABELLED) {
  if (customElements.get(tag) !== undefined) continue;
  const Base = base as unknown as new () => FieldElement;
  class Labelled extends Base {
    override updated(changed: unknown): void {
      super.updated?.(changed);
      const label = this.controller?.props?.label;
      for (const input of this.querySelectorAll('input, textarea, select')) {
        if (input.closest('label') !== null || (input.hasAttribute('aria-label') && !input.hasAttribute('data-studio-label'))) continue;
        if (typeof label === 'string' && label !== '') input.setAttribute('aria-label', label);
        else input.removeAttribute('aria-label');
        input.setAttribute('data-studio-label', '');
      }
    }
  }
  // Its styles are scoped anew to its own tag (the base keeps the sheet it scoped to its tag on the class).
  Object.assign(Labelled, { _processedSheet: undefined, _processedCss: undefined, _adoptedRoots: undefined });
  customElements.define(tag, Labelled);
}
const components = [...basicCatalog.components.values()].map((c) => {
  const labelled = LABELLED.find(([name]) => name === c.name);
  return labelled === undefined ? c : { ...c, tagName: labelled[2] };
});

/**
 * The basic catalog under both ids it is known by: the seed's and `@a2ui/web_core` 0.11's (the
 * plugin's default), and the one CopilotKit's React renderer registers (an agent set up for such a
 * page names that one).
 */
const CATALOGS = [
  new Catalog(basicCatalog.id, components, [...basicCatalog.functions.values()]),
  new Catalog('https://a2ui.org/specification/v0_9/basic_catalog.json', components, [...basicCatalog.functions.values()]),
];

/** Draws the surfaces the operations create into `host`, one `<a2ui-surface>` each; a click is reported to `onAction`. */
export function renderSurfaces(host: HTMLElement, operations: readonly unknown[], onAction: (action: A2uiClientAction) => void): void {
  // The markdown renderer the Text components ask for (a context request that bubbles up to the host).
  new ContextProvider(host, { context: Context.markdown, initialValue: renderMarkdown });
  const processor = new MessageProcessor(CATALOGS, onAction);
  const surfaces: SurfaceModel<never>[] = [];
  processor.onSurfaceCreated((s) => surfaces.push(s as SurfaceModel<never>));
  let problem: unknown;
  try {
    processor.processMessages(operations as A2uiMessage[]);
  } catch (e) {
    problem = e;
  }
  for (const surface of surfaces) {
    const node = document.createElement('a2ui-surface') as A2uiSurface;
    node.surface = surface as never;
    host.append(node);
  }
  if (problem !== undefined) throw problem;
}
