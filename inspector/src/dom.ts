/** A small element builder: the page makes every node with it (text is always text, never HTML). */
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | undefined>;

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === 'class') node.className = String(v);
    else if (k === 'text') node.textContent = String(v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  append(node, ...children);
  return node;
}

export function append(node: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

export const byId = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`#${id} is not on the page`);
  return node as T;
};

/** Pretty JSON for a `<pre>`. */
export const pretty = (v: unknown): string => (v === undefined ? '' : JSON.stringify(v, null, 2));

/** A `<dl>` of label/value pairs (pairs with an empty value left out). */
export function summaryList(pairs: readonly (readonly [string, Child])[]): HTMLDListElement {
  const dl = el('dl', { class: 'summary' });
  for (const [k, v] of pairs) if (v !== undefined && v !== null && v !== '' && v !== false) append(dl, el('dt', {}, k), el('dd', {}, v));
  return dl;
}
