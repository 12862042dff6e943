import { createServer } from "node:http"
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Either, Exit, Layer, Schema, type Scope, TestClock } from "effect"
import { Actor, ActorSystem, Schedules, TimerError } from "tickwork"
import { Admin, AdminApi } from "tickwork/admin"

type Method = "GET" | "POST" | "PATCH"

interface Reply {
  readonly status: number
  readonly type: string | undefined
  readonly body: any
}

/** `value` without its undefined fields, as JSON sends it. */
const withoutUndefined = (value: unknown): unknown =>
  value === null || typeof value !== "object"
    ? value
    : Array.isArray(value)
      ? value.map(withoutUndefined)
      : Object.fromEntries(
          Object.entries(value)
            .filter(([, field]) => field !== undefined)
            .map(([key, field]) => [key, withoutUndefined(field)])
        )

const Reports = Actor.make<string>()({ receive: () => Effect.void })

/**
 * A system named "admin-test" with the schedules "report" (every second, to /user/reports) and "sync" (a task on a
 * cron, every 5 seconds), served by `Admin.layer` on a free port; `call` sends a request as any client would.
 */
const start = (options: Admin.Options = {}) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      Admin.layer({ port: 0, ...options }).pipe(
        Layer.provideMerge(Schedules.layer),
        Layer.provideMerge(ActorSystem.layer({ name: "admin-test" }))
      )
    )
    const server = Context.get(context, Admin.AdminServer)
    const schedules = Context.get(context, Schedules.Schedules)
    const reports = yield* Effect.provide(ActorSystem.spawn(Reports, "reports"), context)
    yield* schedules.create("report", Schedules.every("1 second"), Schedules.send(reports, "numbers"))
    yield* schedules.create("sync", Schedules.cron("*/5 * * * * ?"), Schedules.run(Effect.void))
    const http = yield* HttpClient.HttpClient
    const origin = server.url.replace(/\/admin$/, "")
    const call = (method: Method, path: string, init: { body?: unknown; headers?: Record<string, string> } = {}) =>
      Effect.gen(function* () {
        let request = HttpClientRequest.make(method)(`${origin}${path}`).pipe(
          HttpClientRequest.setHeaders(init.headers ?? {})
        )
        if (init.body !== undefined) request = yield* HttpClientRequest.bodyJson(request, init.body)
        const response = yield* http.execute(request)
        const text = yield* response.text
        const type = response.headers["content-type"]
        return {
          status: response.status,
          type,
          body: type?.startsWith("application/json") && text.length > 0 ? JSON.parse(text) : text
        } satisfies Reply
      }).pipe(Effect.orDie)
    const client = yield* HttpApiClient.make(AdminApi.AdminApi, { baseUrl: origin })
    return { context, server, schedules, reports, call, client }
  })

/** A valid request to each mutating endpoint for `reference`. */
const mutations = (reference: string): ReadonlyArray<readonly [Method, string, unknown]> => [
  ["POST", `/admin/schedules/${reference}/pause`, { note: "why" }],
  ["POST", `/admin/schedules/${reference}/resume`, undefined],
  ["POST", `/admin/schedules/${reference}/trigger`, undefined],
  ["PATCH", `/admin/schedules/${reference}`, { spec: { _tag: "Interval", everyMillis: 100 } }]
]

/** Both the node HTTP client (any header may be set, `Origin` too) and a scope for the system. */
const live = <A, E>(effect: Effect.Effect<A, E, HttpClient.HttpClient | Scope.Scope>) =>
  Effect.scoped(Effect.provide(effect, NodeHttpClient.layer))

describe("Admin.layer", () => {
  it.effect("binds to 127.0.0.1 by default, says where, and serves its OpenAPI document", () =>
    live(
      Effect.gen(function* () {
        const { server, call } = yield* start()
        assert.strictEqual(server.address._tag, "TcpAddress")
        if (server.address._tag !== "TcpAddress") return
        assert.strictEqual(server.address.hostname, "127.0.0.1")
        assert.isAbove(server.address.port, 0)
        assert.strictEqual(server.url, `http://127.0.0.1:${server.address.port}/admin`)
        const openApi = yield* call("GET", "/admin/openapi.json")
        assert.strictEqual(openApi.status, 200)
        assert.strictEqual(openApi.body.info.title, "tickwork admin")
        const paths = Object.keys(openApi.body.paths)
        for (const path of [
          "/admin/schedules",
          "/admin/schedules/{reference}",
          "/admin/schedules/{reference}/history",
          "/admin/schedules/{reference}/pause",
          "/admin/schedules/{reference}/resume",
          "/admin/schedules/{reference}/trigger",
          "/admin/stats",
          "/admin/lateness",
          "/admin/metrics",
          "/admin/timers"
        ]) {
          assert.include(paths, path)
        }
        // the page is for people, not in the API's document
        assert.notInclude(paths, "/admin")
        assert.deepStrictEqual(Object.keys(openApi.body.paths["/admin/schedules/{reference}"]).sort(), ["get", "patch"])
      })
    )
  )

  it.effect("on the loopback it answers only requests addressed to a loopback name (no DNS rebinding)", () =>
    live(
      Effect.gen(function* () {
        const { call, server } = yield* start({ authorize: () => true })
        const port = server.address._tag === "TcpAddress" ? server.address.port : 0
        for (const host of [`evil.example:${port}`, "evil.example", `10.0.0.1:${port}`]) {
          for (const [method, path] of [
            ["GET", "/admin"],
            ["GET", "/admin/schedules"],
            ["POST", "/admin/schedules/report/trigger"]
          ] as const) {
            const reply = yield* call(method, path, { headers: { host } })
            assert.strictEqual(reply.status, 403, `${method} ${path} for ${host}`)
            assert.include(reply.body.message, `does not answer for ${host}`)
          }
        }
        for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `app.localhost:${port}`]) {
          assert.strictEqual((yield* call("GET", "/admin/schedules", { headers: { host } })).status, 200, host)
        }
      })
    )
  )

  it.effect("a bad option fails the layer with InvalidAdminOptions, naming it", () =>
    Effect.gen(function* () {
      const System = ActorSystem.layer({ name: "bad-options" })
      for (const [options, option] of [
        [{ port: -1 }, "port"],
        [{ port: 70_000 }, "port"],
        [{ port: 1.5 }, "port"],
        [{ port: Number.NaN }, "port"],
        [{ host: "" }, "host"],
        [{ host: "  " }, "host"],
        [{ host: 7 as unknown as string }, "host"],
        [{ authorize: "yes" as unknown as () => boolean }, "authorize"]
      ] as const) {
        const exit = yield* Effect.exit(Layer.build(Admin.layer(options).pipe(Layer.provide(System))))
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail") continue
        const error = exit.cause.error
        assert.strictEqual(error._tag, "InvalidAdminOptions")
        if (error._tag === "InvalidAdminOptions") {
          assert.strictEqual(error.option, option)
          assert.include(error.message, `invalid admin option ${option}`)
        }
      }
    }).pipe(Effect.scoped)
  )

  it.effect("the inspector page, its style sheet and its script are served with their content types", () =>
    live(
      Effect.gen(function* () {
        const { call } = yield* start()
        const page = yield* call("GET", "/admin")
        assert.strictEqual(page.status, 200)
        assert.strictEqual(page.type, "text/html; charset=utf-8")
        assert.include(page.body, '<script type="module" src="admin/inspector.js">')
        assert.include(page.body, '<link rel="stylesheet" href="admin/inspector.css" />')
        const script = yield* call("GET", "/admin/inspector.js")
        assert.match(script.type!, /^text\/javascript/)
        assert.include(script.body, "const refresh = async")
        const style = yield* call("GET", "/admin/inspector.css")
        assert.match(style.type!, /^text\/css/)
        assert.include(style.body, "tr.paused")
      })
    )
  )
})

describe("the admin API: reading", () => {
  it.effect("lists the schedules, filtered by kind, owner and state", () =>
    live(
      Effect.gen(function* () {
        const { client, schedules } = yield* start()
        yield* schedules.pause("sync", "upstream down")
        const references = (infos: ReadonlyArray<{ readonly reference: string }>) =>
          infos.map((info) => info.reference).sort()
        assert.deepStrictEqual(references(yield* client.schedules.list({ urlParams: {} })), ["report", "sync"])
        assert.deepStrictEqual(references(yield* client.schedules.list({ urlParams: { kind: "cron" } })), ["sync"])
        assert.deepStrictEqual(references(yield* client.schedules.list({ urlParams: { kind: "interval" } })), [
          "report"
        ])
        assert.deepStrictEqual(references(yield* client.schedules.list({ urlParams: { owner: "/user/reports" } })), [
          "report"
        ])
        assert.deepStrictEqual(references(yield* client.schedules.list({ urlParams: { state: "paused" } })), ["sync"])
        assert.deepStrictEqual(references(yield* client.schedules.list({ urlParams: { kind: "reminder" } })), [])
      })
    )
  )

  it.effect("gets one schedule as the Schedules service shows it, and its history, oldest first", () =>
    live(
      Effect.gen(function* () {
        const { client, schedules } = yield* start()
        yield* TestClock.adjust("3 seconds")
        const report = yield* client.schedules.get({ path: { reference: "report" } })
        assert.deepStrictEqual(report, withoutUndefined(yield* schedules.get("report")))
        assert.strictEqual(report.kind, "interval")
        assert.strictEqual(report.intervalMillis, 1_000)
        assert.strictEqual(report.nextFire, 4_000)
        // no grace limit is Infinity in the service, null on the wire, Infinity again through the client
        assert.strictEqual(report.policies.graceMillis, Number.POSITIVE_INFINITY)
        const history = yield* client.schedules.history({ path: { reference: "report" } })
        assert.deepStrictEqual(
          history.map((run) => [run.instant, run.trigger, run.outcome]),
          [
            [1_000, "schedule", "sent"],
            [2_000, "schedule", "sent"],
            [3_000, "schedule", "sent"]
          ]
        )
        const sync = yield* client.schedules.get({ path: { reference: "sync" } })
        assert.deepStrictEqual([sync.kind, sync.expression, sync.owner], ["cron", "*/5 * * * * ?", "task"])
      })
    )
  )

  it.effect("an unknown reference is 404 ScheduleNotFound, for every endpoint that takes one", () =>
    live(
      Effect.gen(function* () {
        const { client, call } = yield* start({ authorize: () => true })
        const error = yield* Effect.flip(client.schedules.get({ path: { reference: "nope" } }))
        assert.strictEqual(error._tag, "ScheduleNotFound")
        if (error._tag === "ScheduleNotFound") assert.strictEqual(error.reference, "nope")
        for (const [method, path, body] of [
          ["GET", "/admin/schedules/nope", undefined] as const,
          ["GET", "/admin/schedules/nope/history", undefined] as const,
          ...mutations("nope")
        ]) {
          const reply = yield* call(method, path, body === undefined ? {} : { body })
          assert.strictEqual(reply.status, 404, `${method} ${path}`)
          assert.strictEqual(reply.body._tag, "ScheduleNotFound")
          assert.include(reply.body.message, '"nope"')
        }
      })
    )
  )

  it.effect("a schedule source whose storage fails is 503 StorageUnavailable, for list and every endpoint", () =>
    live(
      Effect.gen(function* () {
        const { context, call } = yield* start({ authorize: () => true })
        const down = (reference?: string) =>
          Effect.fail(new TimerError.ScheduleStorageError({ operation: "read", reference, reason: "disk gone" }))
        const source: Schedules.ScheduleSource = {
          name: "broken",
          list: () => down(),
          get: down,
          pause: down,
          resume: down,
          trigger: down,
          update: down,
          remove: down,
          history: down,
          backfill: down
        }
        yield* Schedules.addSource(source).pipe(Effect.provide(context))
        for (const [method, path, body] of [
          ["GET", "/admin/schedules", undefined] as const,
          ["GET", "/admin/schedules/remote", undefined] as const,
          ["GET", "/admin/schedules/remote/history", undefined] as const,
          ...mutations("remote")
        ]) {
          const reply = yield* call(method, path, body === undefined ? {} : { body })
          assert.strictEqual(reply.status, 503, `${method} ${path}`)
          assert.strictEqual(reply.body._tag, "StorageUnavailable")
          assert.include(reply.body.message, "disk gone")
        }
        // A local schedule is still served: local references never reach the source.
        assert.strictEqual((yield* call("GET", "/admin/schedules/report")).status, 200)
      })
    )
  )

  it.effect("a reference with a slash, a space or a quote in it is reached by its URL-encoded form", () =>
    live(
      Effect.gen(function* () {
        const { client, schedules, reports, call } = yield* start()
        const odd = 'reports/daily "eu"'
        yield* schedules.create(odd, Schedules.every("1 hour"), Schedules.send(reports, "daily"))
        // HttpApiClient puts a path parameter in the URL as given: encoding it is the caller's part
        const info = yield* client.schedules.get({ path: { reference: encodeURIComponent(odd) } })
        assert.strictEqual(info.reference, odd)
        const reply = yield* call("GET", `/admin/schedules/${encodeURIComponent(odd)}/history`)
        assert.strictEqual(reply.status, 200)
        assert.deepStrictEqual(reply.body, [])
      })
    )
  )

  it.effect("stats: the system's name and live counts, and whether it takes mutating requests", () =>
    live(
      Effect.gen(function* () {
        const readOnly = yield* start()
        const status = yield* readOnly.client.system.stats()
        const stats = yield* Effect.flatMap(ActorSystem.ActorSystem, (system) => system.stats).pipe(
          Effect.provide(readOnly.context)
        )
        assert.deepStrictEqual(status, { system: "admin-test", operable: false, stats })
        assert.strictEqual(status.stats.actors, 1)
        assert.isTrue(status.stats.engineRunning)
      }).pipe(
        Effect.zipRight(
          Effect.gen(function* () {
            const operable = yield* start({ authorize: () => false })
            assert.isTrue((yield* operable.client.system.stats()).operable)
          })
        )
      )
    )
  )

  it.effect("lateness: the histogram with a count per bucket, whose last bucket has no bound", () =>
    live(
      Effect.gen(function* () {
        const { client } = yield* start()
        const before = yield* client.system.lateness()
        yield* TestClock.adjust("4 seconds")
        const after = yield* client.system.lateness()
        // four runs of "report" (every second), none of "sync" (at 5 s)
        assert.strictEqual(after.count - before.count, 4)
        assert.strictEqual(
          after.buckets.reduce((sum, bucket) => sum + bucket.count, 0),
          after.count
        )
        assert.deepStrictEqual(
          after.buckets.map((bucket) => bucket.upToMillis),
          [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, Number.POSITIVE_INFINITY]
        )
        // under TestClock every tick fires on time: the first bucket (at most 1 ms) took them
        assert.strictEqual(after.buckets[0]!.count - before.buckets[0]!.count, 4)
        assert.isDefined(after.maxMillis)
      })
    )
  )

  it.effect("metrics: tickwork's counters and gauges with their tags, and nothing else of the registry", () =>
    live(
      Effect.gen(function* () {
        const { client, call } = yield* start()
        const delivered = (metrics: ReadonlyArray<typeof AdminApi.MetricValue.Type>) =>
          metrics.find((m) => m.name === "tickwork_ticks_delivered_total" && m.tags.timer_kind === "scheduler_message")
            ?.value ?? 0
        const before = delivered(yield* client.system.metrics())
        yield* TestClock.adjust("2 seconds")
        const metrics = yield* client.system.metrics()
        assert.strictEqual(delivered(metrics) - before, 2)
        assert.isTrue(metrics.every((m) => m.name.startsWith("tickwork_")))
        const active = metrics.find((m) => m.name === "tickwork_timers_active" && m.tags.system === "admin-test")
        assert.deepStrictEqual(active && [active.type, active.value], ["gauge", 2])
        // the histogram has its own endpoint
        assert.isFalse(metrics.some((m) => m.name === "tickwork_tick_lateness_ms"))
        assert.strictEqual((yield* call("GET", "/admin/metrics")).status, 200)
      })
    )
  )

  it.effect("timers: an actor's timers with their mode, interval and next due time; 404 for no such actor", () =>
    live(
      Effect.gen(function* () {
        const { client, context } = yield* start()
        const Heart = Actor.make<string>()({
          preStart: (ctx) =>
            Effect.gen(function* () {
              yield* Effect.orDie(ctx.timers.startTimerAtFixedRate("beat", "beat", "1 second"))
              yield* Effect.orDie(ctx.timers.startSingleTimer("once", "once", "5 seconds"))
              yield* Effect.orDie(ctx.timers.startTimerWithFixedDelay("poll", "poll", "250 millis"))
              yield* ctx.setReceiveTimeout("1 minute", "idle")
            }),
          receive: () => Effect.void
        })
        yield* Effect.provide(ActorSystem.spawn(Heart, "heart"), context)
        yield* TestClock.adjust("1 millis")
        const [heart] = yield* client.system.timers({ urlParams: { owner: "/user/heart" } })
        assert.strictEqual(heart!.owner, "/user/heart")
        assert.deepStrictEqual(heart!.timers, [
          { key: "beat", kind: "actor_timer", mode: "fixed-rate", intervalMillis: 1_000, nextDue: 1_000 },
          { key: "once", kind: "actor_timer", mode: "single", nextDue: 5_000 },
          { key: "poll", kind: "actor_timer", mode: "fixed-delay", intervalMillis: 250, nextDue: 250 },
          {
            key: "receive-timeout",
            kind: "receive_timeout",
            mode: "receive-timeout",
            intervalMillis: 60_000,
            nextDue: 60_000
          }
        ])
        // every actor with a timer: the reports actor has none
        const all = yield* client.system.timers({ urlParams: {} })
        assert.deepStrictEqual(
          all.map((owner) => owner.owner),
          ["/user/heart"]
        )
        const error = yield* Effect.flip(client.system.timers({ urlParams: { owner: "/user/nobody" } }))
        assert.strictEqual(error._tag, "OwnerNotFound")
        const none = yield* client.system.timers({ urlParams: { owner: "/user/reports" } })
        assert.deepStrictEqual(none, [{ owner: "/user/reports", timers: [] }])
      })
    )
  )

  it.effect("timers: limit caps the actors listed", () =>
    live(
      Effect.gen(function* () {
        const { client, context } = yield* start()
        const Ticker = Actor.make<string>()({
          preStart: (ctx) => Effect.orDie(ctx.timers.startSingleTimer("t", "t", "1 minute")),
          receive: () => Effect.void
        })
        for (const name of ["a", "b", "c"]) yield* Effect.provide(ActorSystem.spawn(Ticker, name), context)
        yield* TestClock.adjust("1 millis")
        assert.strictEqual((yield* client.system.timers({ urlParams: {} })).length, 3)
        assert.strictEqual((yield* client.system.timers({ urlParams: { limit: 2 } })).length, 2)
      })
    )
  )

  it.effect("serves the Schedules service in context when there is one (the cluster's, say)", () =>
    live(
      Effect.gen(function* () {
        const reminder: Schedules.ScheduleInfo = {
          reference: "remind-ada",
          kind: "reminder",
          owner: "User/ada",
          expression: undefined,
          intervalMillis: 60_000,
          timeZone: undefined,
          state: "active",
          pause: undefined,
          nextFire: 60_000,
          lastRun: undefined,
          policies: {
            misfire: Schedules.runAll(),
            graceMillis: 1_000,
            overlap: "bufferAll",
            retry: false,
            pauseAfterFailures: undefined
          }
        }
        const local = yield* Effect.map(Schedules.Schedules, (s) => s).pipe(
          Effect.provide(Schedules.layer),
          Effect.provide(ActorSystem.layer({ name: "elsewhere" }))
        )
        const Provided = Layer.succeed(Schedules.Schedules, { ...local, list: () => Effect.succeed([reminder]) })
        const context = yield* Layer.build(
          Admin.layer({ port: 0 }).pipe(
            Layer.provide(Provided),
            Layer.provideMerge(ActorSystem.layer({ name: "with-cluster" }))
          )
        )
        const origin = Context.get(context, Admin.AdminServer).url.replace(/\/admin$/, "")
        const client = yield* HttpApiClient.make(AdminApi.AdminApi, { baseUrl: origin })
        const listed = yield* client.schedules.list({ urlParams: {} })
        assert.deepStrictEqual(listed, [
          {
            reference: "remind-ada",
            kind: "reminder",
            owner: "User/ada",
            intervalMillis: 60_000,
            state: "active",
            nextFire: 60_000,
            policies: {
              misfire: { _tag: "RunAll", max: Number.POSITIVE_INFINITY },
              graceMillis: 1_000,
              overlap: "bufferAll",
              retry: false
            }
          }
        ])
      })
    )
  )
})

describe("the admin API: operating", () => {
  it.effect("pause with a note and by, resume and trigger steer the schedule", () =>
    live(
      Effect.gen(function* () {
        const { client, schedules, call } = yield* start({ authorize: () => true })
        yield* TestClock.adjust("1 second")
        const paused = yield* client.schedules.pause({
          path: { reference: "report" },
          payload: { note: "numbers are being recomputed", by: "ada" }
        })
        assert.strictEqual(paused.state, "paused")
        assert.deepStrictEqual(paused.pause, { note: "numbers are being recomputed", by: "ada", at: 1_000 })
        assert.isUndefined(paused.nextFire)
        yield* TestClock.adjust("3 seconds")
        assert.strictEqual((yield* schedules.history("report")).length, 1)

        const resumed = yield* client.schedules.resume({ path: { reference: "report" } })
        assert.strictEqual(resumed.state, "active")
        assert.isUndefined(resumed.pause)
        assert.strictEqual(resumed.nextFire, 5_000)

        yield* client.schedules.trigger({ path: { reference: "report" } })
        const history = yield* schedules.history("report")
        assert.deepStrictEqual(
          history.map((run) => [run.instant, run.trigger, run.outcome]),
          [
            [1_000, "schedule", "sent"],
            [4_000, "manual", "sent"]
          ]
        )
        // a pause without by says it came through the API; the server trims the note
        const byApi = yield* call("POST", "/admin/schedules/sync/pause", { body: { note: "  later \n" } })
        assert.strictEqual(byApi.status, 200)
        assert.deepStrictEqual([byApi.body.pause.note, byApi.body.pause.by], ["later", "admin api"])
      })
    )
  )

  it.effect("update changes the spec and the policies in place", () =>
    live(
      Effect.gen(function* () {
        const { client } = yield* start({ authorize: () => true })
        yield* TestClock.adjust("10500 millis")
        const faster = yield* client.schedules.update({
          path: { reference: "report" },
          payload: { spec: { _tag: "Interval", everyMillis: 500 } }
        })
        assert.strictEqual(faster.intervalMillis, 500)
        assert.isTrue(faster.nextFire! > 10_500 && faster.nextFire! <= 11_000, String(faster.nextFire))
        const cron = yield* client.schedules.update({
          path: { reference: "report" },
          payload: {
            spec: { _tag: "Cron", expression: "0 * * * * ?", timeZone: "UTC" },
            policies: {
              misfire: { _tag: "RunAll", max: 3 },
              graceMillis: 2_000,
              overlap: "skip",
              pauseAfterFailures: 2
            }
          }
        })
        assert.deepStrictEqual(
          [cron.kind, cron.expression, cron.timeZone, cron.nextFire],
          ["cron", "0 * * * * ?", "UTC", 60_000]
        )
        assert.deepStrictEqual(cron.policies, {
          misfire: { _tag: "RunAll", max: 3 },
          graceMillis: 2_000,
          overlap: "skip",
          retry: false,
          pauseAfterFailures: 2
        })
      })
    )
  )

  it.effect("without authorize every mutating endpoint answers 403 saying why, and changes nothing", () =>
    live(
      Effect.gen(function* () {
        const { call, schedules } = yield* start()
        for (const [method, path, body] of mutations("report")) {
          const reply = yield* call(method, path, body === undefined ? {} : { body })
          assert.strictEqual(reply.status, 403, `${method} ${path}`)
          assert.strictEqual(reply.body._tag, "Forbidden")
          assert.include(reply.body.message, "read-only: give Admin.layer an authorize option")
        }
        const report = yield* schedules.get("report")
        assert.deepStrictEqual([report.state, report.intervalMillis], ["active", 1_000])
        assert.deepStrictEqual(yield* schedules.history("report"), [])
        // reading still works
        assert.strictEqual((yield* call("GET", "/admin/schedules")).status, 200)
        assert.strictEqual((yield* call("GET", "/admin/schedules/report")).status, 200)
      })
    )
  )

  it.effect("authorize decides; a refusal, a failure, a defect and another origin's page are all 403", () =>
    live(
      Effect.gen(function* () {
        const seen: Array<string> = []
        const { call, schedules, server } = yield* start({
          authorize: (request) => {
            seen.push(request.method)
            const token = request.headers["x-admin-token"]
            if (token === "fail") return Effect.fail("token store down")
            if (token === "die") throw new Error("bug in authorize")
            return token === "s3cret"
          }
        })
        const pause = (headers: Record<string, string>) =>
          call("POST", "/admin/schedules/report/pause", { body: { note: "why" }, headers })
        const refused = yield* pause({})
        assert.deepStrictEqual([refused.status, refused.body.message], [403, "authorize refused this request"])
        for (const token of ["wrong", "fail", "die"]) {
          assert.strictEqual((yield* pause({ "x-admin-token": token })).status, 403, token)
        }
        assert.strictEqual((yield* schedules.get("report")).state, "active")
        const evil = yield* pause({ "x-admin-token": "s3cret", origin: "http://evil.example" })
        assert.strictEqual(evil.status, 403)
        assert.include(evil.body.message, "another origin (http://evil.example)")
        assert.strictEqual((yield* schedules.get("report")).state, "active")
        const host = server.url.replace(/\/admin$/, "")
        const allowed = yield* pause({ "x-admin-token": "s3cret", origin: host })
        assert.strictEqual(allowed.status, 200)
        assert.strictEqual((yield* schedules.get("report")).state, "paused")
        // reads never ask authorize
        const asked = seen.length
        yield* call("GET", "/admin/schedules/report")
        assert.strictEqual(seen.length, asked)
      })
    )
  )

  it.effect("bad input is 400 with what was wrong, and changes nothing", () =>
    live(
      Effect.gen(function* () {
        const { call, schedules } = yield* start({ authorize: () => true })
        const bad: ReadonlyArray<readonly [Method, string, unknown, string, string]> = [
          ["POST", "/admin/schedules/report/pause", { note: "   " }, "HttpApiDecodeError", "a pause needs a note"],
          ["POST", "/admin/schedules/report/pause", {}, "HttpApiDecodeError", "note"],
          ["POST", "/admin/schedules/report/pause", { note: 7 }, "HttpApiDecodeError", "string"],
          ["POST", "/admin/schedules/report/pause", { note: "ok", by: "" }, "HttpApiDecodeError", "by"],
          ["POST", "/admin/schedules/report/pause", undefined, "HttpApiDecodeError", ""],
          ["GET", "/admin/schedules?kind=weekly", undefined, "HttpApiDecodeError", "kind"],
          ["GET", "/admin/schedules?state=sleeping", undefined, "HttpApiDecodeError", "state"],
          ["GET", "/admin/timers?limit=0", undefined, "HttpApiDecodeError", "limit"],
          ["GET", "/admin/timers?limit=many", undefined, "HttpApiDecodeError", "limit"],
          [
            "PATCH",
            "/admin/schedules/report",
            { spec: { _tag: "Cron", expression: "every tuesday" } },
            "InvalidRequest",
            "InvalidCronExpression"
          ],
          [
            "PATCH",
            "/admin/schedules/report",
            { spec: { _tag: "Interval", everyMillis: -5 } },
            "InvalidRequest",
            "InvalidTimerInterval"
          ],
          [
            "PATCH",
            "/admin/schedules/report",
            { policies: { pauseAfterFailures: 0 } },
            "InvalidRequest",
            "InvalidSchedulePolicy"
          ],
          ["PATCH", "/admin/schedules/report", { policies: { overlap: "sometimes" } }, "HttpApiDecodeError", "overlap"],
          ["PATCH", "/admin/schedules/report", { spec: { _tag: "Weekly" } }, "HttpApiDecodeError", "_tag"],
          ["PATCH", "/admin/schedules/report", { policies: { graceMillis: null } }, "HttpApiDecodeError", "graceMillis"]
        ]
        for (const [method, path, body, tag, says] of bad) {
          const reply = yield* call(method, path, body === undefined ? {} : { body })
          const what = `${method} ${path} ${JSON.stringify(body)}`
          assert.strictEqual(reply.status, 400, what)
          assert.strictEqual(reply.body._tag, tag, what)
          const text = tag === "InvalidRequest" ? reply.body.error : reply.body.message
          assert.include(text, says, what)
          if (tag === "InvalidRequest") assert.isAbove(reply.body.message.length, 0)
        }
        const report = yield* schedules.get("report")
        assert.deepStrictEqual(
          [report.state, report.intervalMillis, report.policies.pauseAfterFailures],
          ["active", 1_000, undefined]
        )
      })
    )
  )
})

class Hello extends HttpApiGroup.make("hello").add(HttpApiEndpoint.get("hi", "/hi").addSuccess(Schema.String)) {}

describe("Admin.layer beside a program's own HttpApi server", () => {
  class OwnApi extends HttpApi.make("own").add(Hello) {}

  it.effect("the two servers share no routes", () =>
    live(
      Effect.gen(function* () {
        const HelloLive = HttpApiBuilder.group(OwnApi, "hello", (handlers) =>
          handlers.handle("hi", () => Effect.succeed("hi"))
        )
        const Own = HttpApiBuilder.serve().pipe(
          Layer.provide(HttpApiBuilder.api(OwnApi).pipe(Layer.provide(HelloLive))),
          Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 }))
        )
        const context = yield* Layer.build(
          Layer.mergeAll(Own, Admin.layer({ port: 0 })).pipe(Layer.provideMerge(ActorSystem.layer({ name: "own" })))
        )
        const own = Context.get(context, HttpServer.HttpServer).address
        const ownOrigin = own._tag === "TcpAddress" ? `http://127.0.0.1:${own.port}` : ""
        const adminOrigin = Context.get(context, Admin.AdminServer).url.replace(/\/admin$/, "")
        const http = yield* HttpClient.HttpClient
        const status = (url: string) => Effect.map(http.get(url), (response) => response.status)
        assert.strictEqual(yield* status(`${ownOrigin}/hi`), 200)
        assert.strictEqual(yield* status(`${adminOrigin}/admin/schedules`), 200)
        assert.strictEqual(yield* status(`${ownOrigin}/admin/schedules`), 404)
        assert.strictEqual(yield* status(`${adminOrigin}/hi`), 404)
      })
    )
  )
})

describe("Admin.handlers", () => {
  class MyApi extends HttpApi.make("my-app").add(Hello).addHttpApi(AdminApi.AdminApi) {}

  it.effect("serve the admin API inside a program's own HttpApi, errors and authorization included", () =>
    Effect.gen(function* () {
      const HelloLive = HttpApiBuilder.group(MyApi, "hello", (handlers) =>
        handlers.handle("hi", () => Effect.succeed("hi"))
      )
      const ApiLive = HttpApiBuilder.api(MyApi).pipe(
        Layer.provide(HelloLive),
        Layer.provide(Admin.handlers(MyApi, { authorize: (request) => request.headers["x-admin-token"] === "s3cret" }))
      )
      const context = yield* Layer.build(
        HttpApiBuilder.serve().pipe(
          Layer.provide(ApiLive),
          Layer.provideMerge(NodeHttpServer.layerTest),
          Layer.provideMerge(Schedules.layer),
          Layer.provideMerge(ActorSystem.layer({ name: "my-app" }))
        )
      )
      const schedules = Context.get(context, Schedules.Schedules)
      yield* schedules.create("cleanup", Schedules.every("1 hour"), Schedules.run(Effect.void))
      const client = yield* HttpApiClient.make(MyApi).pipe(Effect.provide(context))
      assert.strictEqual(yield* client.hello.hi(), "hi")
      assert.deepStrictEqual(
        (yield* client.schedules.list({ urlParams: {} })).map((s) => s.reference),
        ["cleanup"]
      )
      const missing = yield* Effect.flip(client.schedules.get({ path: { reference: "nope" } }))
      assert.strictEqual(missing._tag, "ScheduleNotFound")
      const refused = yield* Effect.flip(client.schedules.trigger({ path: { reference: "cleanup" } }))
      assert.strictEqual(refused._tag, "Forbidden")
      const authorized = yield* HttpApiClient.make(MyApi, {
        transformClient: HttpClient.mapRequest(HttpClientRequest.setHeader("x-admin-token", "s3cret"))
      }).pipe(Effect.provide(context))
      const paused = yield* authorized.schedules.pause({ path: { reference: "cleanup" }, payload: { note: "why" } })
      assert.strictEqual(paused.state, "paused")
      assert.isTrue(Either.isRight(yield* Effect.either(authorized.system.stats())))
    }).pipe(Effect.scoped)
  )
})
