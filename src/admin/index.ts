/**
 * tickwork's HTTP admin API and inspector page, on `@effect/platform`'s `HttpApi`. Imported as `tickwork/admin`;
 * nothing in the rest of the library imports this folder, so a program that does not use it loads no HTTP server.
 *
 * @since 0.1.0
 */

/**
 * The admin server: `layer` (a Node HTTP server of its own), `handlers` (for a program's own `HttpApi`), `AdminServer`.
 *
 * @since 0.1.0
 */
export * as Admin from "./Admin.js"
/**
 * The `HttpApi` definition: endpoints, Schema bodies and responses, errors.
 *
 * @since 0.1.0
 */
export * as AdminApi from "./AdminApi.js"
