/**
 * The admin API over a cluster runner's durable reminders: a reminder's reference is `<kind>/<key>/<name>` with `/`
 * and `%` of each segment escaped, so it always holds slashes; over HTTP it is one path segment, URL-encoded.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, Exit, Layer, Schema, Scope } from "effect"
import { ActorSystem, Grain, Schedules } from "tickwork"
import { Admin } from "tickwork/admin"
import { ClusterGrain, ClusterRunner, ClusterSchedules, Reminders } from "tickwork/cluster"
import { advance, meanwhile, startRunner } from "../cluster/conformance-helpers.js"

/** When each grain got its message (key, time). */
const received: Array<[string, number]> = []
const Odd = ClusterGrain.make(
  Grain.make<string>()({
    name: "billing/dun%ning",
    onReceive: (ctx) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => received.push([ctx.identity.key, now])))
  }),
  { message: Schema.String }
)

const key = 'acme/eu west?#1 "50%" & co'
const name = "remind/1 ü+"
/** Each segment with `/` and `%` escaped, as `Schedules` shows the reminder. */
const reference = 'billing%2Fdun%25ning/acme%2Feu west?#1 "50%25" & co/remind%2F1 ü+'
const owner = 'billing%2Fdun%25ning/acme%2Feu west?#1 "50%25" & co'

type Method = "GET" | "POST" | "PATCH"

describe("the admin API over reminders", () => {
  it.effect("a reminder whose reference needs escaping: list, get, pause, resume, trigger, update, history", () =>
    Effect.gen(function* () {
      received.length = 0
      const storage = yield* Layer.build(ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:")))
      const runner = yield* startRunner(storage, 1)
      const context = yield* Layer.buildWithScope(
        Admin.layer({ port: 0, authorize: () => true }).pipe(
          Layer.provideMerge(Layer.mergeAll(Schedules.layer, ClusterSchedules.layer, ClusterGrain.layer([Odd]))),
          Layer.provideMerge(Reminders.layer()),
          Layer.provideMerge(ActorSystem.layer({ name: "admin-reminders" }))
        ),
        runner.scope
      ).pipe(Effect.provide(runner.context))
      yield* meanwhile(
        Reminders.registerFor(Odd, key, name, "pay up", Reminders.after("10 seconds", { period: "10 seconds" })).pipe(
          Effect.provide(context)
        )
      )
      const origin = Context.get(context, Admin.AdminServer).url.replace(/\/admin$/, "")
      const http = yield* HttpClient.HttpClient
      const call = (method: Method, path: string, body?: unknown) =>
        Effect.gen(function* () {
          let request = HttpClientRequest.make(method)(`${origin}${path}`)
          if (body !== undefined) request = yield* HttpClientRequest.bodyJson(request, body)
          const response = yield* http.execute(request)
          const text = yield* response.text
          return { status: response.status, body: text.length > 0 ? JSON.parse(text) : undefined }
        }).pipe(Effect.orDie)
      const at = `/admin/schedules/${encodeURIComponent(reference)}`

      const listed = yield* call("GET", `/admin/schedules?kind=reminder`)
      assert.strictEqual(listed.status, 200)
      assert.deepStrictEqual(
        listed.body.map((info: Schedules.ScheduleInfo) => [info.reference, info.owner, info.intervalMillis]),
        [[reference, owner, 10_000]]
      )
      const byOwner = yield* call("GET", `/admin/schedules?owner=${encodeURIComponent(owner)}`)
      assert.deepStrictEqual(
        byOwner.body.map((info: Schedules.ScheduleInfo) => info.reference),
        [reference]
      )

      const got = yield* call("GET", at)
      assert.strictEqual(got.status, 200)
      assert.deepStrictEqual([got.body.reference, got.body.kind, got.body.nextFire], [reference, "reminder", 10_000])
      // The reference as it reads, unencoded, is other paths (or another reminder): never this one.
      assert.strictEqual(
        (yield* call("GET", `/admin/schedules/${encodeURIComponent(`${owner}/remind/1 ü+`)}`)).status,
        404
      )

      const paused = yield* call("POST", `${at}/pause`, { note: "disputed", by: "ada" })
      assert.strictEqual(paused.status, 200)
      assert.deepStrictEqual(
        [paused.body.state, paused.body.pause.note, paused.body.pause.by],
        ["paused", "disputed", "ada"]
      )
      yield* advance(10)
      assert.deepStrictEqual(received, [])
      const resumed = yield* call("POST", `${at}/resume`)
      assert.deepStrictEqual([resumed.status, resumed.body.state, resumed.body.nextFire], [200, "active", 20_000])

      const triggered = yield* meanwhile(call("POST", `${at}/trigger`))
      assert.strictEqual(triggered.status, 204)
      // The grain is reached: a kind name with a `/` makes a valid actor name too (it is URL-encoded in it).
      assert.deepStrictEqual(received, [[key, 11_000]])

      const updated = yield* meanwhile(call("PATCH", at, { spec: { _tag: "Interval", everyMillis: 4_000 } }))
      assert.deepStrictEqual(
        [updated.status, updated.body.reference, updated.body.intervalMillis],
        [200, reference, 4_000]
      )
      yield* advance(4)

      const history = yield* call("GET", `${at}/history`)
      assert.strictEqual(history.status, 200)
      assert.deepStrictEqual(
        history.body.map((run: Schedules.Run) => [run.instant, run.trigger, run.outcome]),
        [
          [10_000, "schedule", "skipped"],
          [11_000, "manual", "sent"],
          [16_000, "schedule", "sent"]
        ]
      )
      yield* Scope.close(runner.scope, Exit.void)
    }).pipe(Effect.provide(NodeHttpClient.layer), Effect.scoped)
  )
})
