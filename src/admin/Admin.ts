/**
 * An HTTP admin server for a running actor system: the admin API (`AdminApi`: list, pause with a note, resume, trigger
 * and update named schedules, see their history, the actors' timers, the engine's stats, metrics and lateness
 * histogram), its OpenAPI document at `/admin/openapi.json`, and the inspector page at `/admin`.
 *
 * It binds to `127.0.0.1` unless told otherwise. Reading needs nothing; the mutating endpoints (pause, resume,
 * trigger, update) answer 403 unless an `authorize` option is given and allows the request.
 *
 * Imported as `tickwork/admin`: the core never imports it, so a program that does not use it loads no HTTP server.
 *
 * @since 0.1.0
 */
import { createServer } from "node:http"
import type * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServer from "@effect/platform/HttpServer"
import type { ServeError } from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ActorSystem } from "../ActorSystem.js"
import { AdminApi } from "./AdminApi.js"
import * as internal from "./internal/handlers.js"

/**
 * How the admin server is bound, and who may change schedules.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The address to listen on (default `"127.0.0.1"`: only this machine can reach it). */
  readonly host?: string
  /** The port (default 9465, beside OpenTelemetry's Prometheus exporter on 9464); 0 picks a free one. */
  readonly port?: number
  /**
   * Decides whether a mutating request (pause, resume, trigger, update) may go on. Without it those endpoints answer
   * 403 and the server is read-only. A failure or defect counts as no. Check a header, a cookie or the peer address:
   * `request.headers`, `request.cookies`, `request.remoteAddress`.
   */
  readonly authorize?: (request: HttpServerRequest.HttpServerRequest) => boolean | Effect.Effect<boolean, unknown>
}

/**
 * The admin layer was given an option it cannot use.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidAdminOptions extends Data.TaggedError("InvalidAdminOptions")<{
  readonly option: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid admin option ${this.option}: ${this.reason}`
  }
}

/**
 * Where the admin server listens: the bound address (with the port picked, for port 0) and the inspector page's URL.
 *
 * @since 0.1.0
 * @category models
 */
export interface AdminServerInfo {
  readonly address: HttpServer.Address
  /** The inspector page, e.g. `http://127.0.0.1:9465/admin`; the API lives under it. */
  readonly url: string
}

/**
 * The running admin server (provided by `layer`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Admin } from "tickwork/admin"
 *
 * const printUrl = Effect.flatMap(Admin.AdminServer, (server) => Effect.log(`inspector at ${server.url}`))
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class AdminServer extends Context.Tag("tickwork/admin/AdminServer")<AdminServer, AdminServerInfo>() {}

const checkOptions = (options: Options): Effect.Effect<Options, InvalidAdminOptions> => {
  const { host, port, authorize } = options
  if (host !== undefined && (typeof host !== "string" || host.trim().length === 0)) {
    return Effect.fail(new InvalidAdminOptions({ option: "host", reason: "must be a non-empty string" }))
  }
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65_535)) {
    return Effect.fail(
      new InvalidAdminOptions({ option: "port", reason: `must be a whole number from 0 to 65535, got ${port}` })
    )
  }
  if (authorize !== undefined && typeof authorize !== "function") {
    return Effect.fail(new InvalidAdminOptions({ option: "authorize", reason: "must be a function" }))
  }
  return Effect.succeed(options)
}

/** The page's URL for a bound address; a wildcard address is reached through the loopback. */
const urlOf = (address: HttpServer.Address): string => {
  if (address._tag === "UnixAddress") return `http+unix://${encodeURIComponent(address.path)}/admin`
  const host =
    address.hostname === "0.0.0.0"
      ? "127.0.0.1"
      : address.hostname === "::"
        ? "[::1]"
        : address.hostname.includes(":")
          ? `[${address.hostname}]`
          : address.hostname
  return `http://${host}:${address.port}/admin`
}

const isLoopback = (hostname: string): boolean =>
  hostname === "localhost" ||
  hostname.endsWith(".localhost") ||
  hostname === "::1" ||
  hostname === "[::1]" ||
  /^127\.\d+\.\d+\.\d+$/.test(hostname)

/** The host name of a `Host` header (`name:port`, `[v6]:port`). */
const hostnameOf = (host: string): string =>
  host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.split(":")[0]!

/**
 * A server bound to the loopback answers only requests addressed to a loopback name: a web page that rebinds its own
 * DNS name to 127.0.0.1 sends its own name as `Host`, and is refused before it can read or steer anything.
 */
const loopbackOnly = (app: HttpApp.Default): HttpApp.Default =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const host = request.headers.host
    return host === undefined || isLoopback(hostnameOf(host))
      ? app
      : Effect.succeed(
          HttpServerResponse.unsafeJson(
            { _tag: "Forbidden", message: `this admin server listens on the loopback and does not answer for ${host}` },
            { status: 403 }
          )
        )
  })

/**
 * The handlers of the admin API's groups for `api`: `AdminApi.AdminApi` itself, or an `HttpApi` of the program's own
 * that added it (`MyApi.addHttpApi(AdminApi.AdminApi)`), served by the program's own server.
 *
 * @example
 * ```ts
 * import { HttpApi, HttpApiBuilder } from "@effect/platform"
 * import { Layer } from "effect"
 * import { Admin, AdminApi } from "tickwork/admin"
 *
 * class MyApi extends HttpApi.make("my-app").addHttpApi(AdminApi.AdminApi) {}
 *
 * const MyApiLive = HttpApiBuilder.api(MyApi).pipe(
 *   Layer.provide(Admin.handlers(MyApi, { authorize: (request) => request.headers["x-admin-token"] === "secret" }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const handlers: <ApiId extends string>(
  api: HttpApi.HttpApi<ApiId, any, any, any>,
  options?: Pick<Options, "authorize">
) => Layer.Layer<internal.AdminGroups<ApiId>, never, ActorSystem> = (api, options = {}) =>
  internal.handlers(api, options)

/**
 * Serves the admin API, its OpenAPI document (`/admin/openapi.json`) and the inspector page (`/admin`) on a Node HTTP
 * server of its own, for the `ActorSystem` in context (and its `Schedules` service, when one is provided: the
 * cluster's, say). The server stops when the layer's scope closes.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ActorSystem } from "tickwork"
 * import { Admin } from "tickwork/admin"
 *
 * const Live = Admin.layer({ port: 0 }).pipe(Layer.provideMerge(ActorSystem.layer({ name: "app" })))
 * const program = Effect.gen(function*() {
 *   const admin = yield* Admin.AdminServer
 *   yield* Effect.log(`inspector at ${admin.url}`)
 * }).pipe(Effect.provide(Live))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<AdminServer, InvalidAdminOptions | ServeError, ActorSystem> =>
  Layer.unwrapEffect(
    Effect.map(checkOptions(options), ({ host = "127.0.0.1", port = 9465, authorize }) => {
      const api = HttpApiBuilder.api(AdminApi).pipe(Layer.provide(internal.handlers(AdminApi, { authorize })))
      const served = HttpApiBuilder.serve(isLoopback(host) ? loopbackOnly : undefined).pipe(
        Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/admin/openapi.json" })),
        Layer.provide(api),
        Layer.provideMerge(NodeHttpServer.layer(createServer, { host, port }))
      )
      const server = Layer.effect(
        AdminServer,
        HttpServer.addressWith((address) =>
          Effect.as(Effect.logInfo(`tickwork admin: the inspector is at ${urlOf(address)}`), {
            address,
            url: urlOf(address)
          })
        )
      )
      // Fresh: HttpApiBuilder's router is one tag, and a program's own HttpApi server must not share its routes.
      return Layer.fresh(server.pipe(Layer.provide(served)))
    })
  )
