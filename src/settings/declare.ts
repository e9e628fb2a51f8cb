// The words a setting is declared with. Each capability declares its own
// settings beside its code (src/<capability>/settings.ts): the environment
// name, the default and the meaning the configuration reference shows, and
// the parse that checks a value, throwing ConfigError naming the setting
// (server.ts prints that one line and exits). config.ts composes the
// sections; scripts/docs-config.ts writes docs/reference/configuration.md
// from the same declarations, so the page and the code cannot disagree.
import { ConfigError } from "../errors.ts";

export type Env = Readonly<Record<string, string | undefined>>;

/** What the configuration reference shows of one setting, in Markdown (links relative to docs/reference/). */
export interface SettingDoc {
  /** The environment variable; a pattern such as `UPSTREAM_<NAME>_LABEL` for settings named after a value. */
  readonly name: string;
  /** The default as a person reads it: a value in backticks, or words when it depends on other settings. */
  readonly default: string;
  /** What it does: one paragraph. */
  readonly meaning: string;
}

/** One capability's settings, in the order the reference lists them. */
export interface SettingsSection {
  readonly title: string;
  /** The module that declares them, from the repository's root. */
  readonly module: string;
  /** A paragraph before the table, when the settings need one. */
  readonly intro?: string;
  readonly settings: readonly SettingDoc[];
}

/** An empty value counts as unset, so `PORT=` in a .env file means "default". */
export function envValue(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
}

/** A setting read as a string and parsed: `read` for one with a default, `optional` for one that may stay unset. */
export interface Setting<T> extends SettingDoc {
  /** The value as given (trimmed); undefined when unset or empty. */
  raw(env: Env): string | undefined;
  /**
   * The value, parsed; when unset, the default parsed the same way: the declared one, or `fallback` for a
   * default that depends on other settings.
   */
  read(env: Env, fallback?: string): T;
  /** The value, parsed; undefined when unset. */
  optional(env: Env): T | undefined;
}

export interface SettingSpec<T> extends SettingDoc {
  /** Checks a value; throws ConfigError naming the setting (`name`). */
  parse(raw: string, name: string): T;
  /** The default, as a value the parse accepts; absent when it depends on other settings or there is none. */
  fallback?: string;
}

export function setting<T>(spec: SettingSpec<T>): Setting<T> {
  const { parse, fallback, ...doc } = spec;
  const raw = (env: Env) => envValue(env, doc.name);
  return {
    ...doc,
    raw,
    read(env, given = fallback) {
      const value = raw(env) ?? given;
      if (value === undefined) throw new Error(`${doc.name} has no default: read it with optional()`);
      return parse(value, doc.name);
    },
    optional(env) {
      const value = raw(env);
      return value === undefined ? undefined : parse(value, doc.name);
    },
  };
}

/** A whole number in a range; the reference says the range after the meaning. */
export interface IntegerSetting extends SettingDoc {
  readonly min: number;
  readonly max: number;
  /** The value as given (trimmed); undefined when unset or empty. */
  raw(env: Env): string | undefined;
  /** The value; when unset, the declared default, or `fallback` for one that depends on other settings. */
  read(env: Env, fallback?: number): number;
}

export interface IntegerSpec extends Omit<SettingDoc, "default"> {
  min: number;
  max: number;
  fallback?: number;
  /** The default as the reference shows it; `` `fallback` `` unless given. */
  default?: string;
}

export function integer(spec: IntegerSpec): IntegerSetting {
  const { fallback, min, max, name } = spec;
  if (spec.default === undefined && fallback === undefined) throw new Error(`${name} needs the default it shows`);
  return {
    name,
    default: spec.default ?? `\`${fallback}\``,
    meaning: `${spec.meaning} A whole number from ${min} to ${max}.`,
    min,
    max,
    raw: (env) => envValue(env, name),
    read(env, given = fallback) {
      const raw = envValue(env, name);
      if (raw === undefined) {
        if (given === undefined) throw new Error(`${name} has no default`);
        return given;
      }
      const value = /^\d{1,10}$/.test(raw) ? Number(raw) : Number.NaN;
      if (!(value >= min && value <= max))
        throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got "${raw}"`);
      return value;
    },
  };
}

export function parseBoolean(name: string, raw: string): boolean {
  const value = raw.toLowerCase();
  if (["true", "1", "yes", "on"].includes(value)) return true;
  if (["false", "0", "no", "off"].includes(value)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

/** A switch: true, 1, yes or on; false, 0, no or off. `fallback` is the default as it is written. */
export function flag(spec: Omit<SettingDoc, "default"> & { fallback: string; default?: string }): Setting<boolean> {
  return setting({
    ...spec,
    default: spec.default ?? `\`${spec.fallback}\``,
    parse: (raw, name) => parseBoolean(name, raw),
  });
}

/** A setting whose value is taken as it is (no parse), with its declared default. */
export function text(spec: SettingDoc & { fallback?: string }): Setting<string> {
  return setting({ ...spec, parse: (raw) => raw });
}

/** A section's declaration, with the module named for the reference. */
export function section(
  title: string,
  module: string,
  settings: readonly SettingDoc[],
  intro?: string,
): SettingsSection {
  return intro === undefined ? { title, module, settings } : { title, module, settings, intro };
}

/** An absolute http(s) URL, kept without a trailing slash so that paths can be appended. */
export function parseBaseUrl(raw: string, name: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {}
  if (!url || !/^https?:$/.test(url.protocol) || url.search !== "" || url.hash !== "" || url.username !== "") {
    throw new ConfigError(name, `must be an absolute http:// or https:// URL without query or fragment, got "${raw}"`);
  }
  return url.href.replace(/\/+$/, "");
}
