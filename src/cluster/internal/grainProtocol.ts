/**
 * The wire side of cluster grains: the entity protocol a grain kind becomes, the errors an ask carries back, the
 * reminder delivery payload, and the guarded client send that never waits on a kind nobody registered.
 */

import type { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as DeliverAt from "@effect/cluster/DeliverAt"
import * as Entity from "@effect/cluster/Entity"
import * as EntityId from "@effect/cluster/EntityId"
import { Sharding } from "@effect/cluster/Sharding"
import * as Rpc from "@effect/rpc/Rpc"
import type * as RpcClient from "@effect/rpc/RpcClient"
import type * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as PrimaryKey from "effect/PrimaryKey"
import * as Schema from "effect/Schema"
import type { Grain } from "../../Grain.js"
import { positiveTimeoutMillis } from "../../internal/askTimeout.js"
import type { InvalidTimerDelay } from "../../TimerError.js"

/**
 * The payload of a reminder delivery: a persisted self-message, due at `due`, deduplicated per occurrence. `manual`
 * (the trigger's id) marks an operator's `Schedules.trigger`: delivered once, outside the grid, which it does not move.
 */
export class ReminderDelivery extends Schema.Class<ReminderDelivery>("tickwork/cluster/ReminderDelivery")({
  name: Schema.String,
  generation: Schema.String,
  due: Schema.Number,
  manual: Schema.optional(Schema.String)
}) {
  [PrimaryKey.symbol](): string {
    const base = `reminder:${this.name}@${this.generation}@${this.due}`
    return this.manual === undefined ? base : `${base}@manual:${this.manual}`
  }
  [DeliverAt.symbol](): DateTime.DateTime {
    return DateTime.unsafeMake(this.due)
  }
}

/**
 * The payload of `RemindNow`: occurrences of the grain's reminders due now, handed over by the runner that holds the
 * grain's shard (`reminderDispatch.ts`), in order.
 */
export class ReminderDeliveries extends Schema.Class<ReminderDeliveries>("tickwork/cluster/ReminderDeliveries")({
  deliveries: Schema.Array(ReminderDelivery)
}) {}

/** A cause as it crosses processes: errors and defects become plain, printable values. */
const WireCause = Schema.Cause({ error: Schema.Defect, defect: Schema.Defect })

/**
 * `schema` as the wire sees it: what arrives is JSON of no known type, checked by `schema` itself. The encoded side
 * of a kind's schemas is the codec's business, so one kind's protocol type names only what its messages, replies and
 * errors are (`Msg`, `A`, `E`), and kinds with different encodings fit one host. Runs exactly as `schema` does.
 */
export const onWire = <A, I>(schema: Schema.Schema<A, I>): Schema.Schema<A, unknown> =>
  Schema.compose(Schema.Unknown, schema, { strict: false })

/** Why an ask failed on the runner that hosts the grain. */
export type AskFailure<E = unknown> =
  | { readonly _tag: "ReplyError"; readonly error: E }
  | { readonly _tag: "Unhandled" }
  | { readonly _tag: "Failed"; readonly cause: Cause.Cause<unknown> }
  | { readonly _tag: "ActivationFailed"; readonly cause: Cause.Cause<unknown> }
  | { readonly _tag: "Undeliverable"; readonly reason: "stopped" | "mailbox-full" }
  | { readonly _tag: "InvalidReply"; readonly issue: string }

/** The schema of `AskFailure`, with the kind's error schema for `ReplyError`. */
export const askFailure = <E>(error: Schema.Schema<E, unknown>): Schema.Schema<AskFailure<E>, unknown> =>
  onWire(
    Schema.Union(
      Schema.TaggedStruct("ReplyError", { error }),
      Schema.TaggedStruct("Unhandled", {}),
      Schema.TaggedStruct("Failed", { cause: WireCause }),
      Schema.TaggedStruct("ActivationFailed", { cause: WireCause }),
      Schema.TaggedStruct("Undeliverable", { reason: Schema.Literal("stopped", "mailbox-full") }),
      Schema.TaggedStruct("InvalidReply", { issue: Schema.String })
    )
  )

/** The payload of Tell and Ask. */
type MessagePayload<Msg> = Schema.Struct<{ message: Schema.Schema<Msg, unknown> }>

/**
 * The entity protocol of a grain kind: tell, ask, a no-op touch (it refreshes idle time), and reminder delivery:
 * `RemindNow` (not persisted: the reminder's row is what is durable) for the occurrences a runner's dispatcher hands
 * over, `Remind` (persisted) for an operator's trigger and for occurrences stored as messages by earlier versions.
 * `Ask` succeeds with the reply (undefined without a reply schema) or fails with an `AskFailure`.
 */
export type GrainRpcs<Msg, A, E> =
  | Rpc.Rpc<"Tell", MessagePayload<Msg>>
  | Rpc.Rpc<"Ask", MessagePayload<Msg>, Schema.Schema<A | undefined, unknown>, Schema.Schema<AskFailure<E>, unknown>>
  | Rpc.Rpc<"Touch">
  | Rpc.Rpc<"Remind", typeof ReminderDelivery>
  | Rpc.Rpc<"RemindNow", typeof ReminderDeliveries>

/** The entity a grain kind becomes. */
export type GrainEntity<Msg, A, E> = Entity.Entity<string, GrainRpcs<Msg, A, E>>

/** The client of one grain's entity. */
export type GrainClient<Msg, A, E> = RpcClient.RpcClient.From<
  GrainRpcs<Msg, A, E>,
  MailboxFull | AlreadyProcessingMessage | PersistenceError
>

/** The success of an ask to a kind without a reply schema: always undefined (the grain's reply is not sent). */
const noReply = <A>(): Schema.Schema<A | undefined, unknown> =>
  onWire(Schema.declare((value): value is A | undefined => value === undefined))

/** The entity a grain kind becomes (see `GrainRpcs`). */
export const makeEntity = <Msg, A, E>(
  name: string,
  message: Schema.Schema<Msg, unknown>,
  reply: Schema.Schema<A, unknown> | undefined,
  error: Schema.Schema<E, unknown>,
  persisted: boolean
): GrainEntity<Msg, A, E> => {
  const payload = { message }
  return Entity.make(name, [
    Rpc.make("Tell", { payload }).annotate(ClusterSchema.Persisted, persisted),
    Rpc.make("Ask", {
      payload,
      success: reply === undefined ? noReply<A>() : onWire(Schema.UndefinedOr(reply)),
      error: askFailure(error)
    }).annotate(ClusterSchema.Persisted, persisted),
    Rpc.make("Touch"),
    Rpc.make("Remind", { payload: ReminderDelivery })
      .annotate(ClusterSchema.Persisted, true)
      .annotate(ClusterSchema.Uninterruptible, true),
    Rpc.make("RemindNow", { payload: ReminderDeliveries }).annotate(ClusterSchema.Uninterruptible, true)
  ])
}

/**
 * What the wire layer needs to know about a cluster grain kind. `Msg`, `A` and `E` are what its messages, replies
 * and `ctx.err` values are; the grain's state is its own (`any` there is the grain's, not the wire's).
 */
export interface KindWire<in out Msg, in out A, in out E> {
  readonly name: string
  readonly grain: Grain<Msg, any, unknown, unknown>
  readonly message: Schema.Schema<Msg, unknown>
  readonly reply: Schema.Schema<A, unknown> | undefined
  readonly error: Schema.Schema<E, unknown>
  readonly entity: GrainEntity<Msg, A, E>
}

/** Any cluster grain kind: what a host or a registry of kinds holds, each kind with its own types. */
export type AnyKindWire = KindWire<any, any, any>

/** The cluster grain of each grain kind made with `ClusterGrain.make` (so `tellGrain` can route a `Grain`). */
export const kindsByGrain = new WeakMap<Grain<any, any, any, any>, AnyKindWire>()

/** The kinds registered on each runner (keyed by its Sharding service), by name. */
const localKinds = new WeakMap<object, Map<string, AnyKindWire>>()

export const registerLocalKind = (sharding: object, kind: AnyKindWire): void => {
  let kinds = localKinds.get(sharding)
  if (kinds === undefined) localKinds.set(sharding, (kinds = new Map()))
  kinds.set(kind.name, kind)
}

export const unregisterLocalKind = (sharding: object, name: string): void => {
  localKinds.get(sharding)?.delete(name)
}

/** The kind `name` as registered on this runner, if it is. */
export const localKind = (sharding: object, name: string): AnyKindWire | undefined =>
  localKinds.get(sharding)?.get(name)

/**
 * The cluster grain kind is not registered where the message must go. The cluster itself would wait forever for a
 * kind no runner registers, so this is checked on the sending runner (it owns the shard, no kind registered) and
 * bounded everywhere else. Its own tag: the single-process `UnknownGrainKind` (Grain.ts) has other fields.
 */
export class UnknownClusterGrainKind extends Data.TaggedError("UnknownClusterGrainKind")<{
  readonly kind: string
  readonly key: string
  readonly detail: string
}> {
  override get message(): string {
    return `cannot reach grain ${this.kind}/${this.key}: ${this.detail}`
  }
}

/** The message does not encode with the kind's message schema, or the receiving runner could not decode it. */
export class InvalidGrainMessage extends Data.TaggedError("InvalidGrainMessage")<{
  readonly grain: string
  readonly issue: string
}> {
  override get message(): string {
    return `message for grain ${this.grain} does not match the kind's message schema: ${this.issue}`
  }
}

/** The grain's reply (or `err` value) does not encode or decode with the kind's reply (or error) schema. */
export class InvalidGrainReply extends Data.TaggedError("InvalidGrainReply")<{
  readonly grain: string
  readonly issue: string
}> {
  override get message(): string {
    return `reply of grain ${this.grain} does not match the kind's schema: ${this.issue}`
  }
}

/** The cluster did not accept a told message in time. */
export class GrainSendTimeout extends Data.TaggedError("GrainSendTimeout")<{
  readonly grain: string
  readonly timeoutMillis: number
}> {
  override get message(): string {
    return `the cluster did not accept a message for grain ${this.grain} within ${this.timeoutMillis} ms: no runner registers the kind for its shard, or runners or storage are unreachable`
  }
}

/** A parse error in one line per issue: "path: message". */
export const issueOf = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`))
    .join("; ")

/** The default bound on handing a message to the cluster. */
export const DEFAULT_SEND_TIMEOUT = Duration.seconds(5)

/** A send's bound in millis, checked: a delay, and more than zero (the default when none is given). */
export const sendTimeoutMillis = (
  timeout: Duration.DurationInput | undefined
): Either.Either<number, InvalidTimerDelay> =>
  positiveTimeoutMillis(
    timeout,
    Duration.toMillis(DEFAULT_SEND_TIMEOUT),
    "a send timeout must be more than 0: a message that may not wait is never accepted"
  )

/** A send's bound in millis (the default when none is given). */
export const timeoutMillisOf = (timeout: Duration.DurationInput | undefined): number =>
  Duration.toMillis(Duration.decode(timeout ?? DEFAULT_SEND_TIMEOUT))

/** The error of a told message (or reminder occurrence) the cluster did not accept within `timeout`. */
export const sendTimedOut =
  (kind: { readonly name: string }, key: string, timeout: Duration.DurationInput | undefined) => (): GrainSendTimeout =>
    new GrainSendTimeout({ grain: `${kind.name}/${key}`, timeoutMillis: timeoutMillisOf(timeout) })

/** `message` encoded with the kind's message schema; `InvalidGrainMessage` when it does not encode. */
export const encodeMessage = <Msg>(
  kind: { readonly name: string; readonly message: Schema.Schema<Msg, unknown> },
  key: string,
  message: Msg
): Either.Either<unknown, InvalidGrainMessage> =>
  Either.mapLeft(
    Schema.encodeEither(kind.message)(message),
    (error) => new InvalidGrainMessage({ grain: `${kind.name}/${key}`, issue: issueOf(error) })
  )

/**
 * `encodeMessage` for many messages of one kind: the schema's encoder is made once. A function of (key, message), as
 * `encodeMessage` is.
 */
export const messageEncoder = <Msg>(kind: {
  readonly name: string
  readonly message: Schema.Schema<Msg, unknown>
}): ((key: string, message: Msg) => Either.Either<unknown, InvalidGrainMessage>) => {
  const encode = Schema.encodeEither(kind.message)
  return (key, message) => {
    const encoded = encode(message)
    // A right is returned as it is (its error type is only a type).
    return Either.isRight(encoded)
      ? (encoded as Either.Either<unknown, never>)
      : Either.left(new InvalidGrainMessage({ grain: `${kind.name}/${key}`, issue: issueOf(encoded.left) }))
  }
}

/**
 * Runs `send` with the entity client of (kind, key) after the check that keeps it from hanging: when this runner
 * owns the key's shard, the kind must be registered here. The send itself is bounded by `timeout`; it runs
 * disconnected, because interrupting a send to an unregistered kind waits for that kind too. Decoding defects
 * become `InvalidGrainMessage` / `InvalidGrainReply`; other defects stay defects.
 */
export const guardedSend = <Msg, A, E, B, EB, E2>(
  kind: KindWire<Msg, A, E>,
  key: string,
  timeout: Duration.DurationInput,
  onTimeout: () => E2,
  send: (client: GrainClient<Msg, A, E>) => Effect.Effect<B, EB>
): Effect.Effect<B, EB | E2 | UnknownClusterGrainKind | InvalidGrainMessage | InvalidGrainReply, Sharding> =>
  Effect.gen(function* () {
    const sharding = yield* Sharding
    const entityId = EntityId.make(key)
    const shardId = sharding.getShardId(entityId, kind.entity.getShardGroup(entityId))
    if (sharding.hasShardId(shardId) && localKind(sharding, kind.name) === undefined) {
      return yield* new UnknownClusterGrainKind({
        kind: kind.name,
        key,
        detail: "this runner owns the grain's shard and no ClusterGrain.layer on it registers the kind"
      })
    }
    const grain = `${kind.name}/${key}`
    const client = (yield* kind.entity.client)(key)
    const sent = send(client).pipe(
      Effect.catchAllDefect((defect) => Effect.fail(defectToError(grain, defect))),
      Effect.disconnect,
      Effect.timeoutFail({ duration: timeout, onTimeout })
    )
    return yield* Effect.catchIf(
      sent,
      (e): e is DefectPassthrough => e instanceof DefectPassthrough,
      (e) => Effect.die(e.defect)
    )
  })

/**
 * Decoding failures surface from the cluster as defects; they are bad input, so they become typed errors. A message
 * the hosting runner cannot decode comes back as a defect reply written by its storage reader: after the trip
 * through `Schema.Defect` that is a plain `Error` named "MalformedMessage" (a local one keeps its tag).
 */
const defectToError = (grain: string, defect: unknown): InvalidGrainMessage | InvalidGrainReply | DefectPassthrough => {
  if (Predicate.isTagged(defect, "MalformedMessage")) {
    return new InvalidGrainMessage({
      grain,
      issue: String(Predicate.hasProperty(defect, "cause") ? defect.cause : undefined)
    })
  }
  if (defect instanceof Error && defect.name === "MalformedMessage") {
    return new InvalidGrainMessage({ grain, issue: defect.message })
  }
  if (ParseResult.isParseError(defect)) return new InvalidGrainReply({ grain, issue: issueOf(defect) })
  return new DefectPassthrough({ defect })
}

/** A defect that is not about decoding: re-raised as a defect after the bounded send. */
class DefectPassthrough extends Data.TaggedError("DefectPassthrough")<{ readonly defect: unknown }> {}
