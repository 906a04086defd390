// Money, numbers, dates and labels, in the host's locale and time zone when
// the host gives them (its host context), else the browser's.

let locale: string | undefined;
let timeZone: string | undefined;

export function setLocale(l?: string, tz?: string): void {
  if (l) locale = l;
  if (tz) timeZone = tz;
}

/** `$40,000` or `$28.50`; an unknown currency code shows as `40000 XYZ`. */
export function money(amount: number, currency?: string): string {
  const digits = Number.isInteger(amount) ? 0 : 2;
  if (currency) {
    try {
      return new Intl.NumberFormat(locale, {
        style: "currency",
        currency,
        minimumFractionDigits: digits,
        maximumFractionDigits: 2,
      }).format(amount);
    } catch {
      return `${count(amount)} ${currency}`;
    }
  }
  return count(amount);
}

/** A unit price (CPM, CPC…): always with cents. */
export function price(amount: number, currency?: string): string {
  if (currency) {
    try {
      return new Intl.NumberFormat(locale, { style: "currency", currency }).format(amount);
    } catch {
      return `${amount} ${currency}`;
    }
  }
  return String(amount);
}

export function count(n: number): string {
  return new Intl.NumberFormat(locale, { maximumFractionDigits: 2 }).format(n);
}

function parse(iso: string): Date | undefined {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** A calendar date of a UTC date-time (flight dates are stored in UTC). */
export function day(iso: string): string {
  const d = parse(iso);
  if (!d) return iso;
  return new Intl.DateTimeFormat(locale, {
    year: "numeric",
    month: "short",
    day: "numeric",
    timeZone: "UTC",
  }).format(d);
}

/** A moment, with its time and zone. */
export function moment(iso: string): string {
  const d = parse(iso);
  if (!d) return iso;
  try {
    return new Intl.DateTimeFormat(locale, {
      year: "numeric",
      month: "short",
      day: "numeric",
      hour: "2-digit",
      minute: "2-digit",
      timeZone,
      timeZoneName: "short",
    }).format(d);
  } catch {
    return d.toISOString();
  }
}

/** Whole days from one date-time to another. */
export function days(fromIso: string, toIso: string): number | undefined {
  const a = parse(fromIso);
  const b = parse(toIso);
  if (!a || !b) return undefined;
  return Math.round((b.getTime() - a.getTime()) / 86_400_000);
}

/** `pending_creatives` -> `pending creatives`. */
export function label(code: string): string {
  return code.replace(/_/g, " ");
}

const MODELS: Record<string, string> = {
  cpm: "CPM",
  vcpm: "vCPM",
  cpc: "CPC",
  cpcv: "CPCV",
  cpv: "CPV",
  cpp: "CPP",
  cpa: "CPA",
  flat_rate: "Flat rate",
  time: "Time-based",
};

/** A pricing model as buyers write it: `cpm` -> `CPM`. */
export function model(code: string): string {
  return MODELS[code] ?? code.toUpperCase();
}
