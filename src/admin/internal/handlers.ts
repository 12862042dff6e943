/**
 * The admin API's handlers over the system in context: its `Schedules` service (the one provided, say the cluster's,
 * or else the system's own), its stats, metrics and actors' timers, the `Authorization` check in front of the
 * mutating endpoints, and the inspector page's files.
 */
import { readFileSync } from "node:fs"
import type * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ActorSystem } from "../../ActorSystem.js"
import { systemOf } from "../../internal/actorSystem.js"
import type { Policies, Spec } from "../../Schedules.js"
import { Schedules } from "../../Schedules.js"
import type { ScheduledReferenceNotFound, ScheduleStorageError } from "../../TimerError.js"
import {
  type AdminApi,
  Authorization,
  Forbidden,
  InvalidRequest,
  OwnerNotFound,
  ScheduleNotFound,
  StorageUnavailable,
  type UpdateRequest
} from "../AdminApi.js"
import { lateness, metrics, ownerTimers } from "./views.js"

/** What the handlers take from `Admin.Options`. */
export interface HandlerOptions {
  readonly authorize?:
    | ((request: HttpServerRequest.HttpServerRequest) => boolean | Effect.Effect<boolean, unknown>)
    | undefined
}

/** The groups of `AdminApi`, as an API that includes them (`AdminApi` itself or a program's own) requires them. */
export type AdminGroups<ApiId extends string> =
  | HttpApiGroup.ApiGroup<ApiId, "schedules">
  | HttpApiGroup.ApiGroup<ApiId, "system">
  | HttpApiGroup.ApiGroup<ApiId, "inspector">

const notFound = (error: ScheduledReferenceNotFound | ScheduleStorageError) =>
  error._tag === "ScheduleStorageError"
    ? new StorageUnavailable({ message: error.message })
    : new ScheduleNotFound({ reference: error.reference, message: error.message })

/**
 * A browser sends `Origin` with every POST and PATCH: a page of another origin (which could post a form to a
 * loopback server) is refused whatever `authorize` says; clients that are not browsers send none.
 */
const crossOrigin = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const origin = request.headers.origin
  if (origin === undefined) return false
  try {
    return new URL(origin).host !== request.headers.host
  } catch {
    return true
  }
}

const authorization = (options: HandlerOptions) =>
  Layer.succeed(
    Authorization,
    Effect.gen(function* () {
      const authorize = options.authorize
      if (authorize === undefined) {
        return yield* new Forbidden({
          message: "this admin server is read-only: give Admin.layer an authorize option to pause, resume or trigger"
        })
      }
      const request = yield* HttpServerRequest.HttpServerRequest
      if (crossOrigin(request)) {
        return yield* new Forbidden({ message: `a request from another origin (${request.headers.origin}) is refused` })
      }
      const allowed = yield* Effect.suspend(() => {
        const answer = authorize(request)
        return typeof answer === "boolean" ? Effect.succeed(answer) : answer
      }).pipe(Effect.catchAllCause(() => Effect.succeed(false)))
      if (!allowed) return yield* new Forbidden({ message: "authorize refused this request" })
    })
  )

const toSpec = (spec: NonNullable<(typeof UpdateRequest.Type)["spec"]>): Spec =>
  spec._tag === "Interval"
    ? spec.firstMillis === undefined
      ? { _tag: "Interval", every: spec.everyMillis }
      : { _tag: "Interval", every: spec.everyMillis, first: spec.firstMillis }
    : spec.timeZone === undefined
      ? { _tag: "Cron", expression: spec.expression }
      : { _tag: "Cron", expression: spec.expression, timeZone: spec.timeZone }

const toPolicies = (policies: NonNullable<(typeof UpdateRequest.Type)["policies"]>): Policies => {
  const { graceMillis, ...rest } = policies
  return graceMillis === undefined ? rest : { ...rest, grace: graceMillis }
}

const invalid = (error: { readonly _tag: string; readonly message: string }) =>
  new InvalidRequest({ error: error._tag, message: error.message })

/** The inspector's three files, shipped beside the code (`src/admin/inspector/`). */
const readPage = Effect.sync(() => {
  const read = (name: string) => readFileSync(new URL(`../inspector/${name}`, import.meta.url), "utf8")
  return { html: read("index.html"), css: read("inspector.css"), js: read("inspector.js") }
})

/** The handlers of `AdminApi`'s groups in `api` (`AdminApi` itself, or a program's API that added it). */
export const handlers = <ApiId extends string>(
  api: HttpApi.HttpApi<ApiId, any, any, any>,
  options: HandlerOptions
): Layer.Layer<AdminGroups<ApiId>, never, ActorSystem> => {
  // The groups are the same objects in any API that added `AdminApi`; typed against it, served under `api`'s id.
  const admin = api as unknown as typeof AdminApi
  const schedulesGroup = HttpApiBuilder.group(admin, "schedules", (handlers) =>
    Effect.gen(function* () {
      const system = yield* ActorSystem
      const provided = yield* Effect.serviceOption(Schedules)
      const schedules = Option.getOrElse(provided, () => systemOf(system)!.schedules.service)
      return handlers
        .handle("list", ({ urlParams }) =>
          Effect.mapError(schedules.list(urlParams), (error) => new StorageUnavailable({ message: error.message }))
        )
        .handle("get", ({ path }) => Effect.mapError(schedules.get(path.reference), notFound))
        .handle("history", ({ path }) => Effect.mapError(schedules.history(path.reference), notFound))
        .handle("pause", ({ path, payload }) =>
          Effect.mapError(schedules.pause(path.reference, payload.note, { by: payload.by ?? "admin api" }), notFound)
        )
        .handle("resume", ({ path }) => Effect.mapError(schedules.resume(path.reference), notFound))
        .handle("trigger", ({ path }) => Effect.mapError(schedules.trigger(path.reference), notFound))
        .handle("update", ({ path, payload }) => {
          const changes = {
            ...(payload.spec === undefined ? {} : { spec: toSpec(payload.spec) }),
            ...(payload.policies === undefined ? {} : { policies: toPolicies(payload.policies) })
          }
          return Effect.mapError(schedules.update(path.reference, changes), (error) =>
            error._tag === "ScheduledReferenceNotFound" || error._tag === "ScheduleStorageError"
              ? notFound(error)
              : invalid(error)
          )
        })
    })
  ).pipe(Layer.provide(authorization(options)))
  const systemGroup = HttpApiBuilder.group(admin, "system", (handlers) =>
    Effect.map(ActorSystem, (system) =>
      handlers
        .handle("stats", () =>
          Effect.map(system.stats, (stats) => ({
            system: system.name,
            operable: options.authorize !== undefined,
            stats
          }))
        )
        .handle("lateness", () => lateness)
        .handle("metrics", () => metrics)
        .handle("timers", ({ urlParams }) =>
          Effect.flatMap(ownerTimers(system, urlParams.owner, urlParams.limit ?? 100), (found) =>
            found === undefined
              ? Effect.fail(
                  new OwnerNotFound({
                    owner: urlParams.owner!,
                    message: `no live actor at ${JSON.stringify(urlParams.owner)}`
                  })
                )
              : Effect.succeed(found)
          )
        )
    )
  )
  const inspectorGroup = HttpApiBuilder.group(admin, "inspector", (handlers) =>
    Effect.map(readPage, (page) =>
      handlers
        .handle("page", () => Effect.succeed(page.html))
        .handle("style", () => Effect.succeed(page.css))
        .handle("script", () => Effect.succeed(page.js))
    )
  )
  return Layer.mergeAll(schedulesGroup, systemGroup, inspectorGroup) as unknown as Layer.Layer<
    AdminGroups<ApiId>,
    never,
    ActorSystem
  >
}
