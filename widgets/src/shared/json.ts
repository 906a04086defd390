// Reading an untyped JSON payload: each accessor answers undefined for a
// value of another type, so a widget shows only what is there.

export type Obj = Record<string, unknown>;

export function obj(v: unknown): Obj | undefined {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : undefined;
}

export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

export function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

export function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

export function bool(v: unknown): boolean | undefined {
  return typeof v === "boolean" ? v : undefined;
}

/** Strings of an array (others dropped). */
export function strs(v: unknown): string[] {
  return arr(v).filter((x): x is string => typeof x === "string" && x !== "");
}
