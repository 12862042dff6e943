// Type-checked in the consumer (nodenext, strict, no skipLibCheck, no @types/node): all four entry points.
import { Effect, Layer, Schema } from "effect"
import { ActorSystem, Grain } from "tickwork"
import { ClusterGrain, ClusterRunner, Reminders } from "tickwork/cluster"
import { TestCluster } from "tickwork/cluster/testkit"
import { TestProbe } from "tickwork/testkit"

const Wake = Schema.TaggedStruct("Wake", {})
const Alarm = Grain.make<typeof Wake.Type>()({ name: "alarm", onReceive: () => Effect.void })
export const AlarmGrain = ClusterGrain.make(Alarm, { message: Wake })

export const Runner = ClusterGrain.layer([AlarmGrain]).pipe(
  Layer.provideMerge(Reminders.layer()),
  Layer.provideMerge(ClusterRunner.layer({ port: 34431, storage: ClusterRunner.sqlite("cluster.db") })),
  Layer.provideMerge(ActorSystem.layer({ name: "runner" }))
)

export const register: Effect.Effect<Reminders.ReminderInfo, Reminders.RegisterError, Reminders.Reminders> =
  Reminders.registerFor(AlarmGrain, "alarm-1", "wake", { _tag: "Wake" }, Reminders.after("1 minute"))

export const probe: Effect.Effect<TestProbe.TestProbe<string>> = TestProbe.make<string>()

export const fired: Effect.Effect<string, unknown> = TestCluster.fireReminder(AlarmGrain, "alarm-1", "wake").pipe(
  Effect.map((delivered) => delivered.message._tag),
  Effect.provide(TestCluster.layer({ kinds: [AlarmGrain] }))
)
