// A tiny element builder. Text always goes in as text nodes (never as
// markup), so nothing from a payload can become HTML.

export type Child = Node | string | number | null | undefined | false | Child[];

export interface Props {
  class?: string;
  title?: string;
  /** Plain attributes (never event handlers: names starting with "on" are refused). */
  attrs?: Record<string, string>;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props?: Props | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props) {
    if (props.class) el.className = props.class;
    if (props.title) el.title = props.title;
    for (const [name, value] of Object.entries(props.attrs ?? {})) {
      if (/^on/i.test(name)) throw new Error(`refused attribute ${name}`);
      el.setAttribute(name, value);
    }
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(parent, c);
    else if (c instanceof Node) parent.appendChild(c);
    else parent.appendChild(document.createTextNode(String(c)));
  }
}

/** Items joined by a separator (" · " by default), empty ones left out. */
export function joined(items: Child[], sep = " · "): Child[] {
  const kept = items.filter((i) => i !== null && i !== undefined && i !== false && i !== "");
  return kept.flatMap((item, i) => (i === 0 ? [item] : [sep, item]));
}
