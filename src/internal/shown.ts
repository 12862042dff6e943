/**
 * A value as an error message shows it: strings quoted, anything else with its type, so that `"42"` and `42`,
 * `"undefined"` and `undefined` read differently.
 */
export const shown = (value: unknown): string =>
  typeof value === "string"
    ? JSON.stringify(value)
    : value === null || value === undefined
      ? String(value)
      : Array.isArray(value)
        ? "an array"
        : typeof value === "object"
          ? "an object"
          : typeof value === "function"
            ? "a function"
            : `${typeof value} ${String(value)}`
